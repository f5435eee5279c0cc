-- ticketiq._require_kind(kind): validate an entry's kind.
--
-- The one rule for an entry kind (accept_entry, record_trace_context): 1 to
-- 64 of a-z 0-9 _ . - starting with a letter, ASCII only, so 64 characters
-- are 64 bytes of any index that holds it.  Raises TQ004 invalid_payload
-- otherwise.
create or replace function ticketiq._require_kind(
    p_kind text
)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_kind is null or p_kind !~ '^[a-z][a-z0-9_.-]{0,63}$' then
        raise exception 'kind must be 1 to 64 of a-z 0-9 _ . - starting with a letter, got %',
            coalesce(left(p_kind, 64), 'null')
            using errcode = 'TQ004';
    end if;
end;
$$;

comment on function ticketiq._require_kind(text) is
'Raise TQ004 unless the entry kind is 1 to 64 of a-z 0-9 _ . - starting with a letter.';
