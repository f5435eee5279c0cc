-- ticketiq.record_trace_context(kind, sender_id, owner, traceparent): the
-- trace a run's entry arrived with.
--
-- Records the W3C traceparent of the request that is about to write the entry
-- (p_kind, p_sender_id) of p_owner, before ticketiq.accept_entry: the run the
-- entry starts has its spans made children of it (ticketiq.run_trace_context).
-- Keyed as the entry is, by its owner too (migration 18): another owner's
-- entry of the same sender id has a context of its own.  The first record of
-- an entry wins, as the first accept of the entry does: a retried request
-- with another traceparent changes nothing and returns false.
-- Limits:
--   p_kind         1..64: a lowercase letter, then lowercase letters, digits, _ . -
--                  (as ticketiq.accept_entry)
--   p_sender_id    1..512 bytes of UTF-8 (as ticketiq.accept_entry)
--   p_owner        1..512
--   p_traceparent  version-traceid-spanid-flags, lower-case hex (55 characters);
--                  not version ff, nor an all-zero trace or span id
-- SQLSTATEs: TQ004 (bad kind, sender id, owner or traceparent).
create or replace function ticketiq.record_trace_context(
    p_kind text,
    p_sender_id text,
    p_owner text,
    p_traceparent text
)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_inserted boolean;
begin
    perform ticketiq._require_kind(p_kind);
    perform ticketiq._require_bytes('sender_id', p_sender_id, 512);
    perform ticketiq._require_text('owner', p_owner, 512);
    -- As the W3C parser (and ticketiq_pg.observe.incoming.parse) reads it: version ff and
    -- all-zero trace or span ids are invalid.
    if p_traceparent is null
        or p_traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
        or left(p_traceparent, 2) = 'ff'
        or substr(p_traceparent, 4, 32) = repeat('0', 32)
        or substr(p_traceparent, 37, 16) = repeat('0', 16) then
        raise exception 'traceparent must be a W3C traceparent, got %', coalesce(left(p_traceparent, 80), 'null')
            using errcode = 'TQ004';
    end if;
    insert into ticketiq.trace_contexts as t (kind, owner, sender_id, traceparent, recorded_at)
    values (p_kind, p_owner, p_sender_id, p_traceparent, ticketiq.now())
    on conflict (kind, owner, sender_id) do nothing
    returning true into v_inserted;
    return coalesce(v_inserted, false);
end;
$$;

comment on function ticketiq.record_trace_context(text, text, text, text) is
'Record the W3C traceparent an owner''s entry arrives with, before it is accepted; the first wins. TQ004.';
