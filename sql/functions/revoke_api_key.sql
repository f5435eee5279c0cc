-- ticketiq.revoke_api_key(key id): revoke an API key; it verifies no more.
--
-- Returns whether the key was live (false: unknown or revoked already,
-- and nothing is changed).  The row is kept, revoked, for the record.
-- Limits:
--   p_key_id  compared only: any text
-- SQLSTATEs: none.
create or replace function ticketiq.revoke_api_key(p_key_id text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    update ticketiq.api_keys as k
    set revoked_at = ticketiq.now()
    where k.key_id = p_key_id and k.revoked_at is null;
    return found;
end;
$$;

comment on function ticketiq.revoke_api_key(text) is
'Revoke a front API key; true if it was live, false if unknown or revoked already.';
