-- ticketiq.stop_runs(actor, reason, owner, statuses, kind, workflow, created range, limit): cancel by filter.
--
-- A person's Stop for every unfinished run the filters match (the oldest
-- first, at most p_limit), each recorded exactly as ticketiq.request_stop
-- records one (audited agent.run.stop_requested, a suspended run woken so
-- its resume sees the Stop), all in one statement.  A run whose Stop was
-- asked already, or that finished meanwhile, is left out.  The filters are
-- those of ticketiq.list_runs (null: any); p_statuses may name only the
-- unfinished statuses (running, claimed, suspended).  Returns one row per
-- run asked to stop, with its status after the request.
-- Limits:
--   p_actor         1..512
--   p_reason        null, or at most 2000 characters
--   p_owner         null (every owner), or 1..512
--   p_statuses      null, or a one-dimensional array of unfinished run statuses (running, claimed,
--                   suspended)
--   p_kind          null, or 1..512
--   p_workflow      null, or 1..200
--   p_created_from  null, or a finite time
--   p_created_to    null, or a finite time
--   p_limit         from 1 to 1000
-- SQLSTATEs: TQ004 (bad actor, reason, filter or limit; ticketiq._require_run_filters).
create or replace function ticketiq.stop_runs(
    p_actor text,
    p_reason text default null,
    p_owner text default null,
    p_statuses text[] default null,
    p_kind text default null,
    p_workflow text default null,
    p_created_from timestamptz default null,
    p_created_to timestamptz default null,
    p_limit integer default 100
)
returns table (
    run_id uuid,
    status text,
    stop_requested_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_run_id uuid;
    v_asked record;
begin
    perform ticketiq._require_text('actor', p_actor, 512);
    perform ticketiq._require_text('reason', p_reason, 2000, true, 0);
    perform ticketiq._require_run_filters(p_owner, p_kind, p_workflow, p_statuses, true,
        array[p_created_from, p_created_to], p_limit, 1000);

    for v_run_id in
        select r.run_id
        from ticketiq.runs as r
        where r.finished_at is null
            and r.stop_requested_at is null
            and (p_owner is null or r.owner = p_owner)
            and (p_statuses is null or r.status = any(p_statuses))
            and (p_kind is null or r.entry_point = p_kind)
            and (p_created_from is null or r.created_at >= p_created_from)
            and (p_created_to is null or r.created_at < p_created_to)
            and (p_workflow is null or exists (
                select 1 from ticketiq.checkpoints as c
                where c.run_id = r.run_id and c.step = 1
                    and c.body #>> '{counters,workflow,name}' = p_workflow
            ))
        order by r.created_at, r.run_id
        limit p_limit
    loop
        begin
            select s.* into v_asked from ticketiq.request_stop(v_run_id, p_actor, p_reason) as s;
        exception when sqlstate 'TQ006' then
            -- finished meanwhile: nothing to stop
            continue;
        end;
        return query select v_asked.run_id, v_asked.status, v_asked.stop_requested_at;
    end loop;
end;
$$;

comment on function ticketiq.stop_runs(text, text, text, text[], text, text, timestamptz, timestamptz, integer) is
'A person''s Stop for every unfinished run the filters match (oldest first, at most p_limit), each as request_stop records it, in one statement. TQ004.';
