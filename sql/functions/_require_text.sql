-- ticketiq._require_text(name, value, max, optional, min): validate a text argument.
--
-- Every text argument an API function stores or indexes has a limit, checked
-- before anything else (a value past a btree's row size would otherwise fail
-- with 54000, an undocumented SQLSTATE).  Raises TQ004 invalid_payload
-- naming the argument: for null (unless p_optional), for fewer than p_min
-- characters (1 by default: not empty) or more than p_max.  Lengths are in
-- characters; every limit leaves room for four bytes per character in the
-- indexes.
create or replace function ticketiq._require_text(
    p_name text,
    p_value text,
    p_max integer,
    p_optional boolean default false,
    p_min integer default 1
)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_value is null then
        if p_optional then
            return;
        end if;
    elsif pg_catalog.length(p_value) between p_min and p_max then
        return;
    end if;
    if p_min = 0 then
        raise exception '% must be at most % characters, got %', p_name, p_max,
            coalesce(pg_catalog.length(p_value)::text, 'null')
            using errcode = 'TQ004';
    end if;
    raise exception '% must be 1 to % characters, got %', p_name, p_max,
        coalesce(pg_catalog.length(p_value)::text, 'null')
        using errcode = 'TQ004';
end;
$$;

comment on function ticketiq._require_text(text, text, integer, boolean, integer) is
'Internal: TQ004 naming the argument unless the text is 1 (or p_min) to p_max characters (null allowed when p_optional).';
