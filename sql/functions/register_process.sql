-- ticketiq.register_process(process, host, os pid): an app process says it is up.
--
-- Records (or refreshes) the process with the backend pid of the calling
-- session, so operators and the leader can see which processes hold leases.
-- Limits:
--   p_process_id  1..512
--   p_host        null, or at most 512 characters
--   p_os_pid      any integer, or null
-- SQLSTATEs: TQ004 (bad process id or host).
create or replace function ticketiq.register_process(
    p_process_id text,
    p_host text default null,
    p_os_pid integer default null
)
returns table (
    process_id text,
    backend_pid integer,
    started_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
begin
    perform ticketiq._require_text('process_id', p_process_id, 512);
    perform ticketiq._require_text('host', p_host, 512, true, 0);
    insert into ticketiq.processes as p (
        process_id, host, os_pid, backend_pid, started_at, last_seen_at
    ) values (
        p_process_id, p_host, p_os_pid, pg_backend_pid(), v_now, v_now
    )
    on conflict (process_id) do update
    set host = excluded.host,
        os_pid = excluded.os_pid,
        backend_pid = excluded.backend_pid,
        last_seen_at = excluded.last_seen_at,
        stopped_at = null;
    return query
    select p.process_id, p.backend_pid, p.started_at
    from ticketiq.processes as p
    where p.process_id = p_process_id;
end;
$$;

comment on function ticketiq.register_process(text, text, integer) is
'Record an app process (and its session''s backend pid) as up. TQ004 for an empty id.';
