-- ticketiq.create_api_key(...): store a new API key of the front, by its hash.
--
-- The front hands out tiq_<key id>_<secret> once and keeps only
-- sha256(secret): a key's secret cannot be read back from the database.
-- p_run_as lists the run-as names the key's identity may act as ('*': any),
-- p_scopes what it may do ('admin': see and stop every run).
-- Limits:
--   p_key_id    8..64 of A-Z a-z 0-9, not taken
--   p_key_hash  exactly 32 bytes
--   p_identity  1..512
--   p_run_as    at most 100 names, each 1..512
--   p_scopes    at most 100 names, each 1..100
-- SQLSTATEs: TQ004 (bad input, or the key id is taken).
create or replace function ticketiq.create_api_key(
    p_key_id text,
    p_key_hash bytea,
    p_identity text,
    p_run_as text[] default '{}',
    p_scopes text[] default '{}'
)
returns table (
    key_id text,
    identity text,
    run_as text[],
    scopes text[],
    created_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_created_at timestamptz;
begin
    if p_key_id is null or p_key_id !~ '^[A-Za-z0-9]{8,64}$' then
        raise exception 'key_id must be 8 to 64 of A-Z a-z 0-9' using errcode = 'TQ004';
    end if;
    if p_key_hash is null or length(p_key_hash) <> 32 then
        raise exception 'key_hash must be 32 bytes (sha256)' using errcode = 'TQ004';
    end if;
    perform ticketiq._require_text('identity', p_identity, 512);
    if p_run_as is null or cardinality(p_run_as) > 100
        or exists (select 1 from unnest(p_run_as) as n where n is null or length(n) not between 1 and 512) then
        raise exception 'run_as must be at most 100 names of 1 to 512 characters' using errcode = 'TQ004';
    end if;
    if p_scopes is null or cardinality(p_scopes) > 100
        or exists (select 1 from unnest(p_scopes) as n where n is null or length(n) not between 1 and 100) then
        raise exception 'scopes must be at most 100 names of 1 to 100 characters' using errcode = 'TQ004';
    end if;
    insert into ticketiq.api_keys as k (key_id, key_hash, identity, run_as, scopes, created_at)
    values (p_key_id, p_key_hash, p_identity, p_run_as, p_scopes, ticketiq.now())
    on conflict on constraint api_keys_pkey do nothing
    returning k.created_at into v_created_at;
    if v_created_at is null then
        raise exception 'key_id % is taken', p_key_id using errcode = 'TQ004';
    end if;
    return query select p_key_id, p_identity, p_run_as, p_scopes, v_created_at;
end;
$$;

comment on function ticketiq.create_api_key(text, bytea, text, text[], text[]) is
'Store a front API key by its SHA-256 hash with its identity, run-as names and scopes. TQ004 bad input or key id taken.';
