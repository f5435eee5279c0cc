-- ticketiq.unrunnable_runs(limit, status): the waiting workflow runs no live process can run.
--
-- A run stays on the workflow version it started with (the one its first
-- checkpoint names), and ticketiq.adopt_run gives it only to a process
-- whose declaration (ticketiq.declare_workflows) names that version.  This
-- lists the claimed runs (woken, or released, and waiting for such a
-- process) and the suspended ones (asleep, or waiting for a signal: they
-- will wait for one when they wake) whose workflow version no live process
-- (processes.stopped_at null) can run; none while a live process declared
-- nothing (it runs any run).  What a worker logs at its start, what
-- `ticketiq-pg status` shows, and what ticketiq.fail_unrunnable_runs fails
-- once the operator's limit has passed.  Oldest waiting first (updated_at:
-- when it was woken, released or suspended); p_status keeps one of the two.
-- Limits:
--   p_limit   from 1 to 1000
--   p_status  null, or one of claimed, suspended
-- SQLSTATEs: TQ004 (bad limit or status).
create or replace function ticketiq.unrunnable_runs(
    p_limit integer default 100,
    p_status text default null
)
returns table (
    run_id uuid,
    status text,
    workflow text,
    workflow_version text,
    waiting_since timestamptz,
    wait_key text
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if p_limit is null or p_limit not between 1 and 1000 then
        raise exception 'limit must be 1 to 1000' using errcode = 'TQ004';
    end if;
    if p_status is not null and p_status not in ('claimed', 'suspended') then
        raise exception 'status must be claimed or suspended, not %', left(p_status, 40)
            using errcode = 'TQ004';
    end if;
    if exists (
        select 1 from ticketiq.processes as p where p.stopped_at is null and p.workflows is null
    ) then
        return;
    end if;
    return query
    select r.run_id, r.status::text, f.body #>> '{counters,workflow,name}',
        f.body #>> '{counters,workflow,version}', r.updated_at, r.wait_key::text
    from ticketiq.runs as r
    inner join ticketiq.checkpoints as f on r.run_id = f.run_id and f.step = 1
    where r.status in ('claimed', 'suspended') and (p_status is null or r.status = p_status)
        and f.body -> 'counters' ? 'workflow'
        and not exists (
            select 1 from ticketiq.processes as p
            where p.stopped_at is null
                and coalesce((p.workflows -> (f.body #>> '{counters,workflow,name}'))
                    ? (f.body #>> '{counters,workflow,version}'), false)
        )
    order by r.updated_at, r.run_id
    limit p_limit;
end;
$$;

comment on function ticketiq.unrunnable_runs(integer, text) is
'The claimed and suspended workflow runs whose version (their first checkpoint''s) no live process declared it can run, oldest waiting first. TQ004.';
