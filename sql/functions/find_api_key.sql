-- ticketiq.find_api_key(key id): what the front needs to verify a key.
--
-- The key's stored hash (compared by the front in constant time with the
-- hash of the secret presented), its identity, run-as names and scopes.
-- No row for an unknown or revoked key.
-- Limits:
--   p_key_id  compared only: any text (no row when unknown)
-- SQLSTATEs: none.
create or replace function ticketiq.find_api_key(p_key_id text)
returns table (
    key_id text,
    key_hash bytea,
    identity text,
    run_as text[],
    scopes text[]
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select k.key_id, k.key_hash, k.identity, k.run_as, k.scopes
    from ticketiq.api_keys as k
    where k.key_id = p_key_id and k.revoked_at is null;
end;
$$;

comment on function ticketiq.find_api_key(text) is
'A live API key''s hash, identity, run-as names and scopes; no row if unknown or revoked.';
