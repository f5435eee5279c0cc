-- ticketiq._adoptable(holder, run id, limit): the claimed runs p_holder may
-- adopt now, locked for it, the oldest claimed first.
--
-- The one choice of ticketiq.adopt_run (one run, or p_run_id) and
-- ticketiq.adopt_runs (a batch, in one query: a loop of single picks
-- would plan and lock a thousand times).  Each run is locked FOR UPDATE
-- SKIP LOCKED, so of several adopters each claimed run goes to exactly
-- one (I2, I3).  Left out: without p_run_id, a child whose parent is
-- running or claimed (left to the parent: ticketiq.take_over_child), unless
-- its parent waits for it with others, the first to end
-- (ticketiq.first_waits: any process runs it); a workflow run p_holder's
-- process cannot run (ticketiq._can_run_workflow against its declared
-- workflows; before its first checkpoint, a process that declared a
-- workflow of its entry kind); a holder that declared nothing takes any
-- run.  Nothing is written; the caller's SQLSTATEs only.
-- Limits:
--   p_holder   the adopter (checked by the caller)
--   p_run_id   any run id, or null (the oldest claimed runs)
--   p_limit    how many at most (the caller bounds it)
create or replace function ticketiq._adoptable(
    p_holder text,
    p_run_id uuid,
    p_limit integer
)
returns setof uuid
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_can jsonb;
begin
    select p.workflows into v_can from ticketiq.processes as p where p.process_id = p_holder;

    return query
    select r.run_id
    from ticketiq.runs as r
    where r.status = 'claimed' and (p_run_id is null or r.run_id = p_run_id)
        -- A child whose parent runs (or is up for adoption) is left to its parent,
        -- which asks again by its delegation key and takes it over once.
        and (p_run_id is not null or r.parent_run_id is null or not exists (
            select 1 from ticketiq.runs as p
            where p.run_id = r.parent_run_id and p.status in ('running', 'claimed')
        ) or exists (select 1 from ticketiq.first_waits as fw where fw.run_id = r.run_id))
        -- A run stays on the workflow version it started with: adopted only by a
        -- process whose code can run that version (a rolling deploy's old worker).
        -- An agent run's kind names no workflow version: no checkpoint is read for it.
        and (v_can is null
            or (r.entry_point <> 'cron' and not exists (
                select 1 from ticketiq.workflow_versions as w where w.kind = r.entry_point
            ))
            or coalesce((
                select ticketiq._can_run_workflow(v_can, f.body, l.body)
                from ticketiq.checkpoints as f
                left join ticketiq.checkpoints as l
                    on l.run_id = r.run_id and l.step = r.last_step
                where f.run_id = r.run_id and f.step = 1 and f.body -> 'counters' ? 'workflow'
            ),
            -- before its first checkpoint: any version of a workflow of its kind
            r.entry_point = 'cron' or exists (
                select 1 from ticketiq.workflow_versions as w
                where w.kind = r.entry_point and v_can ? w.name
            )))
    order by r.updated_at
    limit p_limit
    for update of r skip locked;
end;
$$;

comment on function ticketiq._adoptable(text, uuid, integer) is
'Internal: the claimed runs p_holder may adopt (p_run_id, or the oldest claimed, at most p_limit), locked FOR UPDATE SKIP LOCKED; children left to their running parents and workflow runs its code cannot run left out.';
