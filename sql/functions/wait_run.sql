-- ticketiq.wait_run(run, epoch, step key, wait key, seconds, detail): a workflow step waits.
--
-- The durable waits of a workflow run (ticketiq_pg.workflow): a sleep
-- (wait key timer:<anything>, p_seconds required) or a signal of the run
-- (wait key signal:<run id>:<name>, p_seconds its timeout or null).  In one
-- fenced statement (ticketiq._fence) it answers at once when the wait is
-- over, else suspends the run:
--   'signal'     the oldest signal of that name not yet consumed is consumed
--                by this step (consumed_by = p_step_key) and its payload
--                returned; the step's timer, if any, is cancelled.  A step
--                that consumed one already (a retry, a resume of the step)
--                gets the same signal again: consumed once; a step key that
--                consumed a signal of another name is TQ007;
--   'due'        the sleep's timer is due; 'timeout': the signal's timer
--                is due and no signal came.  The timer (one per run and step
--                key, due p_seconds after its first call by the database
--                clock, so a resume keeps the time the first attempt set)
--                is marked fired if ticketiq.fire_due_timers has not.  The
--                timer is bound to the wait key it was set for: the step key
--                waiting under another key is TQ007 (its timer would never
--                wake it: issue 46, finding 4);
--   'suspended'  otherwise: the run gives its lease up (epoch + 1, status
--                suspended on p_wait_key, workflow.waiting audited); the
--                timer (ticketiq.fire_due_timers) or the signal
--                (ticketiq.send_signal) wakes it on any process.
-- Unlike ticketiq.suspend_run it does not ask for runs.may_wait: a workflow
-- declares its waits, whatever its entry point.  The run must be written
-- ahead (durable).
-- Limits:
--   p_run_id    the run
--   p_epoch     the writer's epoch
--   p_step_key  1..512
--   p_wait_key  1..512, timer:... or signal:<this run's id>:<name>
--   p_seconds   null (a signal without timeout) or 0..1e9
--   p_detail    a JSON object, audited with the suspension (its step_key,
--               due_at, wait_key and step are the system's, whatever it says)
-- SQLSTATEs: TQ004 (bad key, seconds or detail; a run not written ahead),
--   TQ007 (the step key consumed a signal of another name, or its timer was
--   set for another wait key),
--   TQ001, TQ002, TQ003, TQ006 (ticketiq._fence).
create or replace function ticketiq.wait_run(
    p_run_id uuid,
    p_epoch bigint,
    p_step_key text,
    p_wait_key text,
    p_seconds double precision default null,
    p_detail jsonb default '{}'
)
returns table (
    outcome text,
    payload jsonb,
    due_at timestamptz,
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
    v_signal_prefix text := 'signal:' || p_run_id::text || ':';
    v_is_signal boolean;
    v_payload jsonb;
    v_consumed_name text;
    v_timer ticketiq.workflow_timers;
begin
    perform ticketiq._require_text('step_key', p_step_key, 512);
    perform ticketiq._require_text('wait_key', p_wait_key, 512);
    v_is_signal := p_wait_key like 'signal:%';
    if v_is_signal and (left(p_wait_key, length(v_signal_prefix)) <> v_signal_prefix
        or length(p_wait_key) = length(v_signal_prefix)) then
        raise exception 'a signal wait key is signal:<run id>:<name> of this run, not %', p_wait_key
            using errcode = 'TQ004';
    end if;
    if not v_is_signal and (p_wait_key not like 'timer:_%' or p_seconds is null) then
        raise exception 'a wait key is timer:... (with seconds) or signal:<run id>:<name>'
            using errcode = 'TQ004';
    end if;
    if p_seconds is not null and not p_seconds between 0 and 1e9 then
        raise exception 'seconds must be 0 to 1000000000, not %', p_seconds using errcode = 'TQ004';
    end if;
    if p_detail is null or jsonb_typeof(p_detail) <> 'object' then
        raise exception 'detail must be a JSON object' using errcode = 'TQ004';
    end if;
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;
    if not v_run.durable then
        raise exception 'run % is not written ahead: it cannot wait durably', p_run_id
            using errcode = 'TQ004';
    end if;

    if v_is_signal then
        -- A step key consumes one signal: asked again (a resume) it finds that one; asked
        -- for another name it is a conflict, never the earlier signal's payload.
        select s.payload, s.name into v_payload, v_consumed_name
        from ticketiq.workflow_signals as s
        where s.run_id = p_run_id and s.consumed_by = p_step_key;
        if found and v_consumed_name <> substr(p_wait_key, length(v_signal_prefix) + 1) then
            raise exception 'step key % already consumed signal %, not %', p_step_key,
                v_consumed_name, substr(p_wait_key, length(v_signal_prefix) + 1)
                using errcode = 'TQ007';
        end if;
        if not found then
            update ticketiq.workflow_signals as s
            set consumed_at = v_now, consumed_by = p_step_key
            where s.signal_id = (
                select min(o.signal_id) from ticketiq.workflow_signals as o
                where o.run_id = p_run_id and o.name = substr(p_wait_key, length(v_signal_prefix) + 1)
                    and o.consumed_at is null
            )
            returning s.payload into v_payload;
            if found then
                update ticketiq.workflow_timers as t
                set state = 'cancelled', fired_at = v_now
                where t.run_id = p_run_id and t.timer_key = p_step_key and t.state = 'set';
                insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
                values (v_now, 'workflow.signal_consumed', p_run_id, p_epoch, v_run.lease_holder,
                    jsonb_build_object('wait_key', p_wait_key, 'step_key', p_step_key));
            end if;
        end if;
        if v_payload is not null then
            return query select 'signal'::text, v_payload, null::timestamptz, p_epoch;
            return;
        end if;
    end if;

    if p_seconds is not null then
        insert into ticketiq.workflow_timers as t (run_id, timer_key, wait_key, due_at, set_at)
        values (p_run_id, p_step_key, p_wait_key, v_now + make_interval(secs => p_seconds), v_now)
        on conflict (run_id, timer_key) do nothing;
        -- Locked, as ticketiq.fire_due_timers locks it: a timer that fired meanwhile is
        -- seen fired, and the run never suspends on a timer already spent.
        select t.* into v_timer from ticketiq.workflow_timers as t
        where t.run_id = p_run_id and t.timer_key = p_step_key
        for update;
        if v_timer.wait_key <> p_wait_key then
            -- Its timer wakes the run on the key it was set for: suspended on another, the
            -- run would wait for a wake that never comes.
            raise exception 'step key %''s timer is set for %, not %', p_step_key,
                v_timer.wait_key, p_wait_key
                using errcode = 'TQ007';
        end if;
        if v_timer.due_at <= v_now or v_timer.state = 'fired' then
            if v_timer.state = 'set' then
                update ticketiq.workflow_timers as t
                set state = 'fired', fired_at = v_now
                where t.run_id = p_run_id and t.timer_key = p_step_key;
            end if;
            return query select case when v_is_signal then 'timeout' else 'due' end,
                null::jsonb, v_timer.due_at, p_epoch;
            return;
        end if;
    end if;

    return query select 'suspended'::text, null::jsonb, v_timer.due_at,
        ticketiq._suspend(v_run, p_wait_key, 'workflow.waiting',
            -- the system's fields last: a caller's detail cannot write them
            p_detail || jsonb_build_object('step_key', p_step_key, 'due_at', v_timer.due_at), v_now);
end;
$$;

comment on function ticketiq.wait_run(uuid, bigint, text, text, double precision, jsonb) is
'A workflow step waits for its timer or a signal: answers signal/due/timeout at once when the wait is over, else suspends the run (epoch + 1). Fenced.';
