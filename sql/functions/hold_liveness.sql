-- ticketiq.hold_liveness(process): take this process's liveness token on the calling session.
--
-- Call it on a dedicated, direct (not pooled through a transaction-mode
-- pooler) autocommit connection, after ticketiq.register_process.  It takes
-- a session-level advisory lock (classid 29809, objid a fresh key from
-- ticketiq.liveness_keys) and records the key and this session's backend
-- pid on the process's row, clearing stopped_at.  The lock lives exactly as
-- long as the session: when the process dies, PostgreSQL ends the session
-- and the lock goes with it, which ticketiq.watch_processes notices.  A
-- fresh key per call means a reconnecting process never waits for its old
-- session's lock.  was_reaped tells the caller that a watcher found its
-- previous session ended and took its runs over (they are fenced; its
-- next renewal tells which).
-- Limits:
--   p_process_id  1..512
-- SQLSTATEs: TQ004 (bad process id), TQ011 process never registered.
create or replace function ticketiq.hold_liveness(p_process_id text)
returns table (
    process_id text,
    liveness_key integer,
    backend_pid integer,
    was_reaped boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_key integer := nextval('ticketiq.liveness_keys');
    v_reaped boolean;
begin
    perform ticketiq._require_text('process_id', p_process_id, 512);
    select p.ended_reason is not null into v_reaped
    from ticketiq.processes as p
    where p.process_id = p_process_id
    for update;
    if not found then
        raise exception 'process % is not registered', p_process_id using errcode = 'TQ011';
    end if;
    -- A fresh key is never held by anyone: the try cannot fail, but a
    -- liveness token must never be assumed, so check.
    if not pg_catalog.pg_try_advisory_lock(29809, v_key) then
        raise exception 'liveness key % is taken', v_key using errcode = 'TQ004';
    end if;
    update ticketiq.processes as p
    set liveness_key = v_key,
        liveness_backend_pid = pg_catalog.pg_backend_pid(),
        liveness_since = v_now,
        last_seen_at = v_now,
        stopped_at = null,
        ended_reason = null
    where p.process_id = p_process_id;
    return query select p_process_id, v_key, pg_catalog.pg_backend_pid(), v_reaped;
end;
$$;

comment on function ticketiq.hold_liveness(text) is
'Take the process''s liveness token (a session-level advisory lock 29809/key) on the calling session; TQ011 if not registered.';
