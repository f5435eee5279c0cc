-- ticketiq._require_bytes(name, value, max bytes): validate a text argument
-- limited in bytes.
--
-- For the text an index holds beside other long text (a sender's id beside
-- its owner, a signal's sender key beside its name): a limit in characters
-- would have to leave room for four bytes each, so these are limited to
-- p_max bytes of UTF-8 (octet_length) instead, which an index can count on
-- (migration 18).  Raises TQ004 invalid_payload naming the argument for
-- null, empty, or more than p_max bytes.
create or replace function ticketiq._require_bytes(
    p_name text,
    p_value text,
    p_max integer
)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is not null and p_value <> '' and pg_catalog.octet_length(p_value) <= p_max then
        return;
    end if;
    raise exception '% must be 1 to % bytes (UTF-8), got %', p_name, p_max,
        coalesce(pg_catalog.octet_length(p_value)::text, 'null')
        using errcode = 'TQ004';
end;
$$;

comment on function ticketiq._require_bytes(text, text, integer) is
'Internal: TQ004 naming the argument unless the text is 1 to p_max bytes of UTF-8.';
