-- ticketiq.slow_vendor(vendor, owner, seconds): the vendor answered 429 or
-- 503 with Retry-After: every process waits that long before its next
-- call to it.
--
-- The vendor's bucket (the owner's, where its limit is per owner) is not
-- taken from until now + p_seconds by the database clock (a later time
-- already set stays).  A vendor with no limit row has no bucket: nothing
-- changes, false is returned.
-- Limits:
--   p_vendor   any text
--   p_owner    null, or 1..512 bytes of UTF-8
--   p_seconds  seconds in [0, 3600]
-- SQLSTATEs: TQ004 (bad owner or seconds).
create or replace function ticketiq.slow_vendor(
    p_vendor text,
    p_owner text,
    p_seconds double precision
)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_limit ticketiq.vendor_limits;
    v_scope text;
begin
    if p_owner is not null then
        perform ticketiq._require_bytes('owner', p_owner, 512);
    end if;
    if p_seconds is null or p_seconds = 'NaN'::double precision or p_seconds not between 0 and 3600 then
        raise exception 'seconds must be 0..3600' using errcode = 'TQ004';
    end if;
    select l.* into v_limit from ticketiq.vendor_limits as l where l.vendor = p_vendor;
    if not found then
        return false;
    end if;
    v_scope := case when v_limit.per = 'owner' then coalesce(p_owner, '') else '' end;
    insert into ticketiq.vendor_buckets as b (vendor, scope, tokens, refilled_at, slowed_until, slowed)
    values (p_vendor, v_scope, 0, v_now, v_now + make_interval(secs => p_seconds), 1)
    on conflict (vendor, scope) do update
    set slowed_until = greatest(b.slowed_until, excluded.slowed_until),
        slowed = b.slowed + 1;
    return true;
end;
$$;

comment on function ticketiq.slow_vendor(text, text, double precision) is
'A vendor asked to wait (429/503 Retry-After): no process takes its token until then. TQ004 bad seconds.';
