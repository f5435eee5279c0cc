-- ticketiq.suspend_run(run, epoch, wait key, detail): wait without a lease.
--
-- A run that may wait (runs.may_wait) and must wait for an event — an
-- approval (wait key approval:<id>), a person's reply (reply:<conversation>),
-- a child run (child:<run id>) — gives its lease up: it becomes
-- 'suspended' at epoch + 1, so its process can hold nothing more for it.
-- ticketiq.wake_runs (or the event's own function: decide_approval, the
-- child's hand-on) wakes it on whichever process gets it.  If the event
-- already happened (the approval is decided, the child finished), the run is
-- woken at once.  Fenced (ticketiq._fence).
-- Limits:
--   p_run_id    the run
--   p_epoch     the writer's epoch
--   p_wait_key  1..512
--   p_detail    a JSON object
-- SQLSTATEs: TQ004 (bad wait key or detail, a run that may not wait or is
--   not written ahead), TQ001, TQ002, TQ003, TQ006 (ticketiq._fence).
create or replace function ticketiq.suspend_run(
    p_run_id uuid,
    p_epoch bigint,
    p_wait_key text,
    p_detail jsonb default '{}'
)
returns table (
    run_id uuid,
    status text,
    epoch bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
    v_done boolean;
begin
    perform ticketiq._require_text('wait_key', p_wait_key, 512);
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;
    if not v_run.may_wait or not v_run.durable then
        raise exception 'run % may not wait (or is not written ahead): it cannot be suspended', p_run_id
            using errcode = 'TQ004';
    end if;
    if p_detail is null or jsonb_typeof(p_detail) <> 'object' then
        raise exception 'detail must be a JSON object' using errcode = 'TQ004';
    end if;

    perform ticketiq._suspend(v_run, p_wait_key, 'agent.run.suspended', p_detail, v_now);

    -- The event may have happened before the run got here.  The event's row
    -- is locked first: a decision or a child's end committing at this
    -- moment either is seen here, or its wake-up sees this suspension.
    v_done := case
        when p_wait_key like 'approval:%' then exists (
            select 1 from ticketiq.approval_requests as a
            where a.approval_id::text = substr(p_wait_key, 10) and a.state <> 'waiting'
            for update
        )
        when p_wait_key like 'child:%' then exists (
            select 1 from ticketiq.runs as c
            where c.run_id::text = substr(p_wait_key, 7)
                and (c.finished_at is not null
                    or exists (select 1 from ticketiq.answers as a where a.run_id = c.run_id))
            for update
        )
        else false
    end;
    if v_done then
        perform ticketiq._wake(p_wait_key, v_now);
    end if;

    return query select r.run_id, r.status::text, r.epoch::bigint
    from ticketiq.runs as r where r.run_id = p_run_id;
end;
$$;

comment on function ticketiq.suspend_run(uuid, bigint, text, jsonb) is
'A run that may wait gives its lease up until the event p_wait_key names; woken at once if it already happened. Fenced.';
