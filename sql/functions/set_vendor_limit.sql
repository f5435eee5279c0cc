-- ticketiq.set_vendor_limit(vendor, rate, burst, concurrency, per, set_by):
-- set a vendor's limits, shared by every process.
--
-- A rate of p_rate calls a second with bursts of p_burst, and at most
-- p_concurrency calls in flight (either may be null: no such limit), for
-- all the vendor's calls (p_per 'all') or each owner's apart ('owner').
-- The app sets its limits at start (p_set_by 'app'); an operator's
-- ('operator') stays until an operator changes it again: the app's start
-- then changes nothing (the row as it stands is returned).  Takes hold
-- from the next call of any process (ticketiq.take_vendor_token reads the
-- row at each take).  A bucket's tokens are capped at the new burst.
-- Limits:
--   p_vendor       a name of 1..64: a lowercase letter, then a-z 0-9 _ . -
--   p_rate         null, or calls a second in (0, 1e6]
--   p_burst        a number of calls, from 1 to 1000000
--   p_concurrency  null, or a number of calls, from 1 to 100000
--   p_per          one of all, owner
--   p_set_by       one of app, operator
-- SQLSTATEs: TQ004 (a value outside its limit).
create or replace function ticketiq.set_vendor_limit(
    p_vendor text,
    p_rate double precision,
    p_burst integer,
    p_concurrency integer,
    p_per text default 'all',
    p_set_by text default 'app'
)
returns table (
    vendor text,
    rate double precision,
    burst integer,
    concurrency integer,
    per text,
    set_by text,
    updated_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
begin
    if p_vendor is null or p_vendor !~ '^[a-z][a-z0-9_.-]{0,63}$' then
        raise exception 'vendor must be 1..64 of a-z 0-9 _ . -, starting with a letter'
            using errcode = 'TQ004';
    end if;
    if p_rate is not null and not (p_rate > 0 and p_rate <= 1e6) then
        raise exception 'rate must be null or calls a second in (0, 1e6]' using errcode = 'TQ004';
    end if;
    if p_burst is null or p_burst not between 1 and 1000000 then
        raise exception 'burst must be 1..1000000' using errcode = 'TQ004';
    end if;
    if p_concurrency is not null and p_concurrency not between 1 and 100000 then
        raise exception 'concurrency must be null or 1..100000' using errcode = 'TQ004';
    end if;
    if p_per is null or p_per not in ('all', 'owner') then
        raise exception 'per must be all or owner' using errcode = 'TQ004';
    end if;
    if p_set_by is null or p_set_by not in ('app', 'operator') then
        raise exception 'set_by must be app or operator' using errcode = 'TQ004';
    end if;

    insert into ticketiq.vendor_limits as l (vendor, rate, burst, concurrency, per, set_by, updated_at)
    values (p_vendor, p_rate, p_burst, p_concurrency, p_per, p_set_by, v_now)
    on conflict (vendor) do update
    set rate = excluded.rate,
        burst = excluded.burst,
        concurrency = excluded.concurrency,
        per = excluded.per,
        set_by = excluded.set_by,
        updated_at = excluded.updated_at
    where p_set_by = 'operator' or l.set_by = 'app';
    update ticketiq.vendor_buckets as b
    set tokens = least(b.tokens, l.burst)
    from ticketiq.vendor_limits as l
    where l.vendor = p_vendor and b.vendor = p_vendor;

    return query
    select l.vendor, l.rate, l.burst, l.concurrency, l.per, l.set_by, l.updated_at
    from ticketiq.vendor_limits as l
    where l.vendor = p_vendor;
end;
$$;

comment on function ticketiq.set_vendor_limit(text, double precision, integer, integer, text, text) is
'Set a vendor''s rate and concurrency limits (for all its calls or per owner), shared by every process; an operator''s setting stays over the app''s. TQ004 bad values.';
