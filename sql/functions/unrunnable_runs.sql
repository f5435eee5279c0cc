-- ticketiq.unrunnable_runs(limit, status): the waiting workflow runs no live process can run.
--
-- A run stays on the workflow version it started with (the one its first
-- checkpoint names), and ticketiq.adopt_run gives it only to a process
-- whose declaration (ticketiq.declare_workflows) names that version.  This
-- lists the claimed runs (woken, or released, and waiting for such a
-- process) and the suspended ones (asleep, or waiting for a signal: they
-- will wait for one when they wake) whose workflow version no live process
-- can run; none while a live process declared nothing (it runs any run).
-- Live: not stopped (processes.stopped_at null), and either holding a
-- liveness token (the liveness watch marks it stopped once its session
-- ends) or seen within 30 s by the database clock (last_seen_at: its lease
-- renewals, and its idle heartbeat, every TICKETIQ_RENEW_INTERVAL).  A
-- process without a token (TICKETIQ_LIVENESS_INTERVAL=0) that was
-- SIGKILLed is never marked stopped: without the 30 s it would hide the
-- runs only it could run for ever.  What a worker logs at its start, what
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
declare
    v_seen_after timestamptz;
begin
    if p_limit is null or p_limit not between 1 and 1000 then
        raise exception 'limit must be 1 to 1000' using errcode = 'TQ004';
    end if;
    if p_status is not null and p_status not in ('claimed', 'suspended') then
        raise exception 'status must be claimed or suspended, not %', left(p_status, 40)
            using errcode = 'TQ004';
    end if;
    v_seen_after := ticketiq.now() - interval '30 seconds';
    if exists (
        select 1 from ticketiq.processes as p
        where p.stopped_at is null and p.workflows is null
            and (p.liveness_key is not null or p.last_seen_at > v_seen_after)
    ) then
        return;
    end if;
    return query
    select r.run_id, r.status::text, f.body #>> '{counters,workflow,name}',
        f.body #>> '{counters,workflow,version}', r.updated_at, r.wait_key::text
    from ticketiq.runs as r
    inner join ticketiq.checkpoints as f on r.run_id = f.run_id and f.step = 1
    left join ticketiq.checkpoints as l on r.run_id = l.run_id and l.step = r.last_step
    where r.status in ('claimed', 'suspended') and (p_status is null or r.status = p_status)
        and f.body -> 'counters' ? 'workflow'
        and not exists (
            select 1 from ticketiq.processes as p
            where p.stopped_at is null
                and (p.liveness_key is not null or p.last_seen_at > v_seen_after)
                and ticketiq._can_run_workflow(p.workflows, f.body, l.body)
        )
    order by r.updated_at, r.run_id
    limit p_limit;
end;
$$;

comment on function ticketiq.unrunnable_runs(integer, text) is
'The claimed and suspended workflow runs whose version (their first checkpoint''s, and the newer code their last is pinned to) no live process (holding a liveness token, or seen within 30 s) declared it can run, oldest waiting first. TQ004.';
