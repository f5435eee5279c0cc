-- ticketiq.suspend_for_vendor(vendor, run, epoch, call, owner): a run that
-- has waited for a vendor's token long enough gives its lease up until its
-- turn.
--
-- A call's wait for a token (ticketiq.take_vendor_token) past the process's
-- threshold (TICKETIQ_VENDOR_SUSPEND_AFTER) would hold a lease and a task
-- for nothing: the run becomes 'suspended' on the wait key vendor:<vendor>
-- at epoch + 1 (ticketiq._suspend, audited vendor.waiting), given a turn.
-- A vendor limited by a rate gives the turn a token now (taken from the
-- bucket, which may then owe tokens: the calls after it wait longer), kept
-- in ticketiq.vendor_turns until the bucket has paid it back: its turn, so
-- runs that suspend are woken a token apart, in the order they suspended,
-- and the woken call's next take is granted with that token.  A call that
-- holds a turn come due already (woken, it waits a token's time after
-- another's grant) is not suspended again: suspended false, its lease kept,
-- due_at when to look again (a resume makes the step's reads again, each
-- taking a token: suspended each time, its turn would never come).  Never before
-- the time the vendor asked every process to wait until
-- (ticketiq.slow_vendor).  A vendor limited by its concurrency only, no
-- token to keep, looks again after half a second.  A timer
-- (ticketiq.workflow_timers, key vendor:<call id>:<epoch>) that
-- ticketiq.fire_due_timers fires at the turn wakes this run only.
-- Nothing is counted against the call's retries.  Fenced
-- (ticketiq._fence); the run must be written ahead (durable).
-- Limits:
--   p_vendor   a vendor with a limit (ticketiq.vendor_limits)
--   p_run_id   the run
--   p_epoch    the writer's epoch
--   p_call_id  1..256
--   p_owner    null, or 1..512 bytes of UTF-8
-- SQLSTATEs: TQ004 (bad call id or owner, a vendor with no limit, a run not
--   written ahead), TQ001, TQ002, TQ003, TQ006 (ticketiq._fence).
create or replace function ticketiq.suspend_for_vendor(
    p_vendor text,
    p_run_id uuid,
    p_epoch bigint,
    p_call_id text,
    p_owner text default null
)
returns table (
    due_at timestamptz,
    epoch bigint,
    suspended boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
    v_limit ticketiq.vendor_limits;
    v_scope text;
    v_slowed_until timestamptz;
    v_granted_at timestamptz;
    v_tokens double precision;
    v_refilled double precision;
    v_due timestamptz;
    v_kept timestamptz;
begin
    perform ticketiq._require_text('call_id', p_call_id, 256);
    if p_owner is not null then
        perform ticketiq._require_bytes('owner', p_owner, 512);
    end if;
    select l.* into v_limit from ticketiq.vendor_limits as l where l.vendor = p_vendor;
    if not found then
        raise exception 'vendor % has no limit: nothing to wait for', p_vendor
            using errcode = 'TQ004';
    end if;
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;
    if not v_run.durable then
        raise exception 'run % is not written ahead: it cannot wait durably', p_run_id
            using errcode = 'TQ004';
    end if;
    select g.o_scope, g.o_slowed_until, g.o_granted_at, g.o_now, g.o_tokens
    into v_scope, v_slowed_until, v_granted_at, v_now, v_refilled
    from ticketiq._vendor_bucket(v_limit, p_owner, v_now) as g;

    select t.due_at into v_kept
    from ticketiq.vendor_turns as t
    where t.run_id = p_run_id and t.call_id = p_call_id and t.vendor = p_vendor;
    if v_limit.rate is not null and v_kept <= v_now then
        return query select greatest(v_now, v_slowed_until,
            v_granted_at + make_interval(secs => 1 / v_limit.rate)), p_epoch, false;
        return;
    elsif v_limit.rate is not null and v_kept is not null then
        -- woken before its turn: it keeps its token and waits for the turn again
        v_due := v_kept;
    elsif v_limit.rate is not null then
        v_tokens := v_refilled - 1;
        v_due := v_now + make_interval(secs => greatest(-v_tokens, 0) / v_limit.rate);
    else
        v_due := v_now + interval '0.5 seconds';
    end if;
    if v_slowed_until > v_due then
        v_due := v_slowed_until;
    end if;
    update ticketiq.vendor_buckets as b
    set tokens = coalesce(v_tokens, b.tokens),
        refilled_at = case when v_tokens is null then b.refilled_at else v_now end,
        suspended = b.suspended + 1
    where b.vendor = p_vendor and b.scope = v_scope;
    if v_limit.rate is not null then
        insert into ticketiq.vendor_turns as t (run_id, call_id, vendor, due_at)
        values (p_run_id, p_call_id, p_vendor, v_due)
        on conflict (run_id, call_id) do update
        set vendor = excluded.vendor, due_at = excluded.due_at;
    end if;

    insert into ticketiq.workflow_timers (run_id, timer_key, wait_key, due_at, set_at)
    values (p_run_id, 'vendor:' || p_call_id || ':' || p_epoch, 'vendor:' || p_vendor, v_due, v_now)
    on conflict (run_id, timer_key) do update
    set due_at = excluded.due_at, wait_key = excluded.wait_key, set_at = excluded.set_at,
        state = 'set', fired_at = null;

    return query select v_due,
        ticketiq._suspend(v_run, 'vendor:' || p_vendor, 'vendor.waiting',
            jsonb_build_object('vendor', p_vendor, 'call_id', p_call_id, 'due_at', v_due), v_now),
        true;
end;
$$;

comment on function ticketiq.suspend_for_vendor(text, uuid, bigint, text, text) is
'A run waiting for a vendor token gives its lease up until its turn (a token kept for it, a timer wakes it). Fenced.';
