-- ticketiq._vendor_bucket(limit, owner, now): a vendor's token bucket,
-- created if new, locked, and its tokens refilled to now.
--
-- The one read of a bucket for the calls that take from it
-- (ticketiq.take_vendor_token, ticketiq.suspend_for_vendor).  The bucket is
-- the vendor's (p_limit.per 'all': scope '') or the owner's ('owner': scope
-- p_owner, '' for none); a new one starts full (p_limit.burst tokens).  The
-- row is locked for the caller's update (by vendor and o_scope); o_now is
-- the clock read after the lock (a wait for the bucket is not time to
-- refill), never before p_now; o_tokens what the bucket holds at o_now:
-- refilled at p_limit.rate since it was last refilled, at most
-- p_limit.burst (a vendor with no rate: its burst); o_slowed_until and
-- o_granted_at as stored.  Scalars, not the row: a caller's INTO list takes
-- them in its one statement.  Nothing is written but a new bucket; the
-- caller's SQLSTATEs only.
create or replace function ticketiq._vendor_bucket(
    p_limit ticketiq.vendor_limits,
    p_owner text,
    p_now timestamptz,
    out o_scope text,
    out o_slowed_until timestamptz,
    out o_granted_at timestamptz,
    out o_now timestamptz,
    out o_tokens double precision
)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_refilled_at timestamptz;
begin
    insert into ticketiq.vendor_buckets (vendor, scope, tokens, refilled_at)
    values (p_limit.vendor, case when p_limit.per = 'owner' then coalesce(p_owner, '') else '' end,
        p_limit.burst, p_now)
    on conflict do nothing;
    select b.scope, b.slowed_until, b.granted_at, b.tokens, b.refilled_at
    into o_scope, o_slowed_until, o_granted_at, o_tokens, v_refilled_at
    from ticketiq.vendor_buckets as b
    where b.vendor = p_limit.vendor
        and b.scope = case when p_limit.per = 'owner' then coalesce(p_owner, '') else '' end
    for update;
    -- Read after the lock: a wait for the bucket must not be counted as time to refill.
    o_now := greatest(p_now, ticketiq.now());
    o_tokens := case
        when p_limit.rate is null then p_limit.burst
        else least(p_limit.burst::double precision,
            o_tokens + p_limit.rate * greatest(extract(epoch from o_now - v_refilled_at), 0))
    end;
end;
$$;

comment on function ticketiq._vendor_bucket(ticketiq.vendor_limits, text, timestamptz) is
'A vendor''s token bucket (the vendor''s or the owner''s), created full if new, locked, its scope and slowed and granted times, the clock after the lock and its tokens refilled to it (at most the burst).';
