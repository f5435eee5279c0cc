-- ticketiq.watch_processes(watcher, session, seen, max losses): notice dead peers by their sessions.
--
-- Called by every app process on a dedicated connection every few hundred
-- milliseconds.  Returns one row per registered process whose liveness
-- token (ticketiq.hold_liveness) is held now (alive) or that the caller
-- listed in p_seen, with `session`, a token naming the caller's own
-- database session (backend pid @ backend start).
--
-- A process listed in p_seen whose token is no longer held is dead: its
-- session ended while the caller's stayed up.  p_seen is honoured only
-- when p_session names the calling session, so a watcher whose own session
-- ended (a PostgreSQL restart or failover ends every session at once)
-- starts again from what it sees in its new session, and no process is
-- reaped merely because every session ended.  For each dead process, once
-- across racing watchers (the row's stopped_at and liveness key are the
-- compare-and-swap): the process is marked ended and audited
-- (process.session_ended); its leader lease and job leases lapse now; and
-- its runs are claimed at once through ticketiq._claim_lapsed, the sweep's
-- own once-only claim (epoch + 1, loss counted, claim_reason
-- 'session_ended', NOTIFY ticketiq_resume).  The epoch is still the
-- fence: if the process was alive after all (only its liveness connection
-- dropped), its next write for those runs is refused.  runs_claimed counts
-- the runs claimed or failed for it by this call.  TQ004 for an empty
-- watcher or a negative p_max_losses.
create or replace function ticketiq.watch_processes(
    p_watcher text,
    p_session text default null,
    p_seen text[] default '{}',
    p_max_losses integer default 2
)
returns table (
    process_id text,
    alive boolean,
    session text,
    runs_claimed integer
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_session text;
    v_honour boolean;
    v_held integer[];
    v_ids text[];
    v_keys integer[];
    v_pids integer[];
    v_proc record;
    v_claimed integer;
begin
    if coalesce(p_watcher, '') = '' then
        raise exception 'watcher must be non-empty' using errcode = 'TQ004';
    end if;
    if p_max_losses is null or p_max_losses < 0 then
        raise exception 'max_losses must be >= 0' using errcode = 'TQ004';
    end if;
    select a.pid || '@' || a.backend_start into v_session
    from pg_catalog.pg_stat_activity as a
    where a.pid = pg_catalog.pg_backend_pid();
    v_honour := p_session is not null and p_session = v_session;

    -- The rows first, the locks second: a process holds its new key's lock
    -- before its row names that key, so a row read before the locks is
    -- never judged dead on a lock table older than itself.
    select coalesce(array_agg(p.process_id order by p.process_id), '{}'),
        coalesce(array_agg(p.liveness_key order by p.process_id), '{}'),
        coalesce(array_agg(p.liveness_backend_pid order by p.process_id), '{}')
    into v_ids, v_keys, v_pids
    from ticketiq.processes as p
    where p.stopped_at is null and p.liveness_key is not null;

    select coalesce(array_agg(l.objid::text::integer), '{}') into v_held
    from pg_catalog.pg_locks as l
    where l.locktype = 'advisory'
        and l.database = (select d.oid from pg_catalog.pg_database as d
            where d.datname = pg_catalog.current_database())
        and l.classid = 29809
        and l.objsubid = 2
        and l.granted;

    for v_proc in
        select c.process_id, c.liveness_key, c.liveness_backend_pid,
            c.liveness_key = any(v_held) as alive
        from unnest(v_ids, v_keys, v_pids) as c (process_id, liveness_key, liveness_backend_pid)
        where c.liveness_key = any(v_held) or c.process_id = any(coalesce(p_seen, '{}'))
        order by c.process_id
    loop
        v_claimed := 0;
        if not v_proc.alive and v_honour and v_proc.process_id <> p_watcher then
            update ticketiq.processes as p
            set stopped_at = v_now,
                ended_reason = 'liveness session ended'
            where p.process_id = v_proc.process_id
                and p.stopped_at is null
                and p.liveness_key = v_proc.liveness_key;
            if found then
                insert into ticketiq.audit (at, event, actor, detail)
                values (v_now, 'process.session_ended', p_watcher, jsonb_build_object(
                    'process_id', v_proc.process_id,
                    'liveness_key', v_proc.liveness_key,
                    'backend_pid', v_proc.liveness_backend_pid,
                    'watcher_session', v_session
                ));
                update ticketiq.leader_leases as l
                set expires_at = v_now
                where l.holder = v_proc.process_id and l.expires_at > v_now;
                update ticketiq.jobs as j
                set lease_expires_at = v_now,
                    updated_at = v_now
                where j.holder = v_proc.process_id
                    and j.state = 'running'
                    and j.lease_expires_at > v_now;
                select count(*)::integer into v_claimed
                from ticketiq._claim_lapsed(
                    p_watcher, p_max_losses, 2147483647, null,
                    jsonb_build_object('reason', 'session_ended', 'session_ended_at', v_now),
                    v_proc.process_id
                );
            end if;
        end if;
        return query select v_proc.process_id, v_proc.alive, v_session, v_claimed;
    end loop;
end;
$$;

comment on function ticketiq.watch_processes(text, text, text[], integer) is
'Report which processes hold their liveness token; claim at once (as the sweep does) the runs of each process seen alive in this same session whose token is gone.';
