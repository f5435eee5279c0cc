-- ticketiq.list_api_keys(): every API key of the front, newest first.
--
-- Its id, identity, run-as names, scopes and when it was created and
-- revoked; never its hash.
-- Limits: none (no arguments).
-- SQLSTATEs: none.
create or replace function ticketiq.list_api_keys()
returns table (
    key_id text,
    identity text,
    run_as text[],
    scopes text[],
    created_at timestamptz,
    revoked_at timestamptz
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select k.key_id, k.identity, k.run_as, k.scopes, k.created_at, k.revoked_at
    from ticketiq.api_keys as k
    order by k.created_at desc, k.key_id;
end;
$$;

comment on function ticketiq.list_api_keys() is
'Every front API key (id, identity, run-as, scopes, created, revoked), newest first; never a hash.';
