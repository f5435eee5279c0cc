-- ticketiq.take_vendor_token(vendor, run, epoch, call, owner): take the
-- right to send one call to a vendor now, or learn how long to wait.
--
-- In one statement, by the database clock: the vendor's bucket (all its
-- calls, or the owner's: ticketiq.vendor_limits.per; ticketiq._vendor_bucket) is refilled at its
-- rate up to its burst; the call is refused, with the seconds to wait,
-- while the vendor asked every process to wait (ticketiq.slow_vendor),
-- while its calls in flight are at its concurrency, or while the bucket
-- holds less than a token; otherwise a token is taken (and the call
-- counted in flight until ticketiq.give_vendor_token, or until its run is
-- no longer held at p_epoch: a dead process's calls are given back when
-- its runs are claimed).  A call whose run suspended for a token
-- (ticketiq.suspend_for_vendor) is granted, from its turn, with the token
-- kept for it then (ticketiq.vendor_turns), nothing more taken from the
-- rate, but no sooner than a token's time (1 / rate) after the bucket's
-- last grant: runs woken together send a token apart.  A vendor with no
-- limit grants at once.  The
-- same call taken again at the same epoch is granted again, nothing more
-- taken.  Fenced by the run (ticketiq._fence): a process that lost the run
-- takes nothing.  Waiting is not a failure: nothing is counted against the
-- call's retries.  counted says the call is counted in flight (give it
-- back when it ends).
-- Limits:
--   p_vendor   any text (a vendor with no limit row: granted)
--   p_run_id   the run
--   p_epoch    the writer's epoch
--   p_call_id  1..256
--   p_owner    null, or 1..512 bytes of UTF-8
-- SQLSTATEs: TQ004 (bad call id or owner), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence).
create or replace function ticketiq.take_vendor_token(
    p_vendor text,
    p_run_id uuid,
    p_epoch bigint,
    p_call_id text,
    p_owner text default null
)
returns table (
    granted boolean,
    wait_seconds double precision,
    counted boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_limit ticketiq.vendor_limits;
    v_scope text;
    v_slowed_until timestamptz;
    v_granted_at timestamptz;
    v_tokens double precision;
    v_in_flight integer;
    v_turn boolean := false;
begin
    perform ticketiq._require_text('call_id', p_call_id, 256);
    if p_owner is not null then
        perform ticketiq._require_bytes('owner', p_owner, 512);
    end if;
    select l.* into v_limit from ticketiq.vendor_limits as l where l.vendor = p_vendor;
    if not found then
        return query select true, 0::double precision, false;
        return;
    end if;
    perform ticketiq._fence('run', p_run_id, p_epoch, v_now);
    select g.o_scope, g.o_slowed_until, g.o_granted_at, g.o_now, g.o_tokens
    into v_scope, v_slowed_until, v_granted_at, v_now, v_tokens
    from ticketiq._vendor_bucket(v_limit, p_owner, v_now) as g;

    if exists (
        select 1 from ticketiq.vendor_calls as c
        where c.run_id = p_run_id and c.call_id = p_call_id and c.epoch = p_epoch
    ) then
        return query select true, 0::double precision, true;
        return;
    end if;

    if v_slowed_until > v_now then
        update ticketiq.vendor_buckets as b
        set tokens = v_tokens, refilled_at = v_now, waited = b.waited + 1
        where b.vendor = p_vendor and b.scope = v_scope;
        return query select false, extract(epoch from v_slowed_until - v_now)::double precision, false;
        return;
    end if;

    if v_limit.concurrency is not null then
        -- A call counts while its run is held at the epoch it was taken at.
        delete from ticketiq.vendor_calls as c
        where c.vendor = p_vendor and c.scope = v_scope
            and not exists (
                select 1 from ticketiq.runs as r
                where r.run_id = c.run_id and r.epoch = c.epoch and r.status = 'running'
            );
        select count(*) into v_in_flight
        from ticketiq.vendor_calls as c
        where c.vendor = p_vendor and c.scope = v_scope;
        if v_in_flight >= v_limit.concurrency then
            update ticketiq.vendor_buckets as b
            set tokens = v_tokens, refilled_at = v_now, waited = b.waited + 1
            where b.vendor = p_vendor and b.scope = v_scope;
            return query select false, 0.05::double precision, false;
            return;
        end if;
    end if;

    if v_limit.rate is not null then
        v_turn := exists (
            select 1 from ticketiq.vendor_turns as t
            where t.run_id = p_run_id and t.call_id = p_call_id and t.vendor = p_vendor
                and t.due_at <= v_now
        );
        if v_turn and v_granted_at > v_now - make_interval(secs => 1 / v_limit.rate) then
            update ticketiq.vendor_buckets as b
            set tokens = v_tokens, refilled_at = v_now, waited = b.waited + 1
            where b.vendor = p_vendor and b.scope = v_scope;
            return query select false,
                extract(epoch from v_granted_at + make_interval(secs => 1 / v_limit.rate) - v_now)
                ::double precision, false;
            return;
        end if;
    end if;
    if v_limit.rate is not null and not v_turn and v_tokens < 1 then
        update ticketiq.vendor_buckets as b
        set tokens = v_tokens, refilled_at = v_now, waited = b.waited + 1
        where b.vendor = p_vendor and b.scope = v_scope;
        return query select false, ((1 - v_tokens) / v_limit.rate)::double precision, false;
        return;
    end if;

    update ticketiq.vendor_buckets as b
    set tokens = case when v_limit.rate is null or v_turn then v_tokens else v_tokens - 1 end,
        refilled_at = v_now,
        granted_at = v_now,
        taken = b.taken + 1
    where b.vendor = p_vendor and b.scope = v_scope;
    if v_turn then
        delete from ticketiq.vendor_turns as t where t.run_id = p_run_id and t.call_id = p_call_id;
    end if;
    if v_limit.concurrency is not null then
        insert into ticketiq.vendor_calls (run_id, call_id, vendor, scope, epoch, taken_at)
        values (p_run_id, p_call_id, p_vendor, v_scope, p_epoch, v_now)
        on conflict (run_id, call_id) do update
        set vendor = excluded.vendor, scope = excluded.scope, epoch = excluded.epoch,
            taken_at = excluded.taken_at;
    end if;
    return query select true, 0::double precision, v_limit.concurrency is not null;
end;
$$;

comment on function ticketiq.take_vendor_token(text, uuid, bigint, text, text) is
'Take a vendor token for one call (rate, burst, concurrency, a vendor''s Retry-After, by the database clock), or return the seconds to wait. Fenced; a vendor with no limit grants at once.';
