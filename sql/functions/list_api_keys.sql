-- ticketiq.list_api_keys(): every API key of the front, newest first.
--
-- Its id, identity, run-as names, scopes, when it was created and revoked
-- and when it last verified a request (null: never; recorded at most once
-- a minute, ticketiq.note_api_key_use); never its hash.
-- Limits: none (no arguments).
-- SQLSTATEs: none.
create or replace function ticketiq.list_api_keys()
returns table (
    key_id text,
    identity text,
    run_as text[],
    scopes text[],
    created_at timestamptz,
    revoked_at timestamptz,
    last_used_at timestamptz
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select k.key_id, k.identity, k.run_as, k.scopes, k.created_at, k.revoked_at,
        k.last_used_at
    from ticketiq.api_keys as k
    order by k.created_at desc, k.key_id;
end;
$$;

comment on function ticketiq.list_api_keys() is
'Every front API key (id, identity, run-as, scopes, created, revoked, last used), newest first; never a hash.';
