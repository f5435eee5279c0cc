-- ticketiq.release_liveness(process): a process stopping cleanly gives up its liveness token.
--
-- Call it last in a graceful shutdown, on the session that holds the
-- token, after the process released its runs: the process is marked
-- stopped (ended_reason 'stopped') and the advisory lock released, so no
-- watcher takes the clean exit for a death.  Only the session that holds
-- the process's current token may release it: from any other session (or
-- when no session holds it) it returns false and changes nothing, so no
-- login can make peers stop watching a live process.  Returns whether
-- this session held the token.
-- Limits:
--   p_process_id  1..512
-- SQLSTATEs: TQ004 (bad process id), TQ011 (process not registered).
create or replace function ticketiq.release_liveness(p_process_id text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_key integer;
begin
    perform ticketiq._require_text('process_id', p_process_id, 512);
    select p.liveness_key into v_key
    from ticketiq.processes as p
    where p.process_id = p_process_id
    for update;
    if not found then
        raise exception 'process % is not registered', p_process_id using errcode = 'TQ011';
    end if;
    if v_key is null or not exists (
        select 1 from pg_catalog.pg_locks as l
        where l.locktype = 'advisory' and l.pid = pg_catalog.pg_backend_pid()
            and l.database = (select d.oid from pg_catalog.pg_database as d
                where d.datname = pg_catalog.current_database())
            and l.classid = 29809 and l.objid = v_key::text::oid and l.objsubid = 2 and l.granted
    ) then
        return false;
    end if;
    update ticketiq.processes as p
    set stopped_at = v_now,
        last_seen_at = v_now,
        ended_reason = 'stopped'
    where p.process_id = p_process_id and p.stopped_at is null;
    return pg_advisory_unlock(29809, v_key);
end;
$$;

comment on function ticketiq.release_liveness(text) is
'Clean stop, from the session holding the token only: mark the process stopped and release its liveness token; false and no change otherwise. TQ004, TQ011.';
