-- ticketiq.note_api_key_use(key id): record that a live key verified a request.
--
-- The front calls it once the key's secret matched.  last_used_at moves
-- only when it is null or over a minute old, so a busy key costs no write
-- per request (the front also calls it at most once a minute per key);
-- an operator reads it with ticketiq.list_api_keys to find unused keys.
-- Returns whether it moved (false: unknown, revoked or used this minute).
-- Limits:
--   p_key_id  compared only: any text
-- SQLSTATEs: none.
create or replace function ticketiq.note_api_key_use(p_key_id text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
begin
    update ticketiq.api_keys as k
    set last_used_at = v_now
    where k.key_id = p_key_id and k.revoked_at is null
        and (k.last_used_at is null or k.last_used_at < v_now - interval '1 minute');
    return found;
end;
$$;

comment on function ticketiq.note_api_key_use(text) is
'Record that a live front API key verified a request (last_used_at, at most once a minute); true if it moved.';
