-- ticketiq._require_positive(name, seconds): validate a duration argument.
--
-- Raises TQ004 invalid_payload for a null, zero, negative or non-finite
-- number of seconds, or one over 1e9 (about 31 years: past it the interval
-- arithmetic overflows), and returns it as an interval otherwise.
create or replace function ticketiq._require_positive(
    p_name text,
    p_seconds double precision
)
returns interval
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_seconds is null or p_seconds <= 0 or p_seconds > 1e9
        or p_seconds = 'NaN'::double precision then
        raise exception '% must be a positive number of seconds up to 1000000000, got %', p_name,
            coalesce(p_seconds::text, 'null')
            using errcode = 'TQ004';
    end if;
    return make_interval(secs => p_seconds);
end;
$$;

comment on function ticketiq._require_positive(text, double precision) is
'Internal: seconds as an interval; TQ004 for null, zero, negative, non-finite or over 1e9.';
