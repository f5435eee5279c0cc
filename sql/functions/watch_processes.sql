-- ticketiq.watch_processes(watcher, session, seen, max losses, grace): notice dead peers by their sessions.
--
-- Called by every app process, every few hundred milliseconds, on the
-- dedicated connection that holds its own liveness token
-- (ticketiq.hold_liveness).  Returns one row per registered process whose
-- token is held now (alive), or that the caller listed in p_seen and whose
-- token is gone, or whose runs this call claimed; `session` names the
-- caller's session: its backend pid and the key of the token it holds
-- (from pg_locks, readable by any role), null when it holds none.
--
-- A process listed in p_seen whose token is no longer held is dead: its
-- session ended while the caller's stayed up.  p_seen is honoured only when
-- p_session names the calling session, so a watcher whose own session
-- ended (a PostgreSQL restart or failover ends every session at once)
-- starts again from what it sees in its new session, and no process is
-- reaped merely because every session ended.  For each dead process, once
-- across racing watchers (the row's stopped_at and liveness key are the
-- compare-and-swap): the process is marked ended and audited
-- (process.session_ended), and its run, job and leader leases are cut to
-- expire p_grace_seconds after its death was found.  The grace covers a
-- process whose session ended before it noticed (a partition, a stall): it
-- makes no outside call unless a watch of its own confirmed its token
-- within less than the grace.  Every call then claims the lapsed runs and
-- jobs of processes so found dead in the last minute, through
-- ticketiq._claim_lapsed, the sweeps' own once-only claim of either kind
-- (epoch + 1, loss counted; a run claimed with claim_reason 'session_ended'
-- and NOTIFY ticketiq_resume, a job queued again with NOTIFY ticketiq_job
-- or failed); rows locked when their leases were cut are cut on a later
-- call.  The epoch is still the fence.  runs_claimed counts the runs
-- claimed or failed by this call (the jobs are audited, not counted).
-- Limits:
--   p_watcher        1..512
--   p_session        compared only, not stored: any text, or null
--   p_seen           compared only, not stored: any array of process ids, or null
--   p_max_losses     >= 0
--   p_grace_seconds  seconds in [0, 1e9]
-- SQLSTATEs: TQ004 (bad watcher, max losses or grace).
create or replace function ticketiq.watch_processes(
    p_watcher text,
    p_session text default null,
    p_seen text[] default '{}',
    p_max_losses integer default 2,
    p_grace_seconds double precision default 0.3
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
    v_grace interval;
    v_db oid := (select d.oid from pg_catalog.pg_database as d
        where d.datname = pg_catalog.current_database());
    v_session text;
    v_honour boolean;
    v_held integer[];
    v_ids text[];
    v_keys integer[];
    v_pids integer[];
    v_proc record;
    v_dead text[];
    v_claimed jsonb;
    v_out_ids text[] := '{}'::text[];
    v_out_alive boolean[] := '{}'::boolean[];
begin
    perform ticketiq._require_text('watcher', p_watcher, 512);
    if p_max_losses is null or p_max_losses < 0 or p_grace_seconds is null
        or not p_grace_seconds between 0 and 1e9 then
        raise exception 'max_losses must be >= 0 and grace 0 to 1000000000 seconds'
            using errcode = 'TQ004';
    end if;
    v_grace := make_interval(secs => p_grace_seconds);

    -- The caller's session: its backend pid and the key of its own token.
    select pg_catalog.pg_backend_pid() || ':' || p.liveness_key into v_session
    from ticketiq.processes as p
    where p.process_id = p_watcher
        and exists (
            select 1 from pg_catalog.pg_locks as l
            where l.locktype = 'advisory' and l.database = v_db and l.classid = 29809
                and l.objsubid = 2 and l.objid = p.liveness_key::text::oid
                and l.pid = pg_catalog.pg_backend_pid() and l.granted
        );
    v_honour := v_session is not null and p_session = v_session;

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
    where l.locktype = 'advisory' and l.database = v_db and l.classid = 29809
        and l.objsubid = 2 and l.granted;

    for v_proc in
        select c.process_id, c.liveness_key, c.liveness_backend_pid,
            c.liveness_key = any(v_held) as alive
        from unnest(v_ids, v_keys, v_pids) as c (process_id, liveness_key, liveness_backend_pid)
        where c.liveness_key = any(v_held) or c.process_id = any(coalesce(p_seen, '{}'))
        order by c.process_id
    loop
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
                    'watcher_session', v_session,
                    'grace_s', p_grace_seconds
                ));
                update ticketiq.leader_leases as l
                set expires_at = least(l.expires_at, v_now + v_grace)
                where l.holder = v_proc.process_id;
            end if;
        end if;
        v_out_ids := v_out_ids || v_proc.process_id;
        v_out_alive := v_out_alive || v_proc.alive;
    end loop;

    -- Processes found dead in the last minute: cut their leases to the grace
    -- (rows locked now are cut on a later call), then claim what lapsed.
    select coalesce(array_agg(p.process_id), '{}') into v_dead
    from ticketiq.processes as p
    where p.ended_reason = 'liveness session ended'
        and p.stopped_at > v_now - interval '1 minute';
    if cardinality(v_dead) > 0 then
        update ticketiq.runs as r
        set lease_expires_at = p.stopped_at + v_grace
        from ticketiq.processes as p
        where r.run_id in (
            select c.run_id from ticketiq.runs as c
            where c.status = 'running' and c.lease_holder = any(v_dead)
            order by c.run_id
            for update skip locked
        )
            and p.process_id = r.lease_holder
            and r.lease_expires_at > p.stopped_at + v_grace;
        update ticketiq.jobs as j
        set lease_expires_at = p.stopped_at + v_grace,
            updated_at = v_now
        from ticketiq.processes as p
        where j.job_id in (
            select c.job_id from ticketiq.jobs as c
            where c.state = 'running' and c.holder = any(v_dead)
            order by c.job_id
            for update skip locked
        )
            and p.process_id = j.holder
            and j.lease_expires_at > p.stopped_at + v_grace;
        select coalesce(jsonb_object_agg(c.holder, c.n), '{}') into v_claimed
        from (
            select x.lapsed_holder as holder, count(*)::integer as n
            from ticketiq._claim_lapsed('run', p_watcher, p_max_losses, 1000, null, '{}'::jsonb, v_dead)
                as x
            group by x.lapsed_holder
        ) as c;
        perform 1
        from ticketiq._claim_lapsed('job', p_watcher, p_max_losses, 1000, null, '{}'::jsonb, v_dead);
    end if;

    return query
    select coalesce(o.process_id, k.key), coalesce(o.alive, false), v_session,
        coalesce((k.value)::integer, 0)
    from unnest(v_out_ids, v_out_alive) as o (process_id, alive)
    full join jsonb_each_text(coalesce(v_claimed, '{}')) as k on o.process_id = k.key
    order by 1;
end;
$$;

comment on function ticketiq.watch_processes(text, text, text[], integer, double precision) is
'Report which processes hold their liveness token; for each process seen alive in this same session whose token is gone, cut its leases to the grace, then claim (as the sweeps do) the lapsed runs and jobs of processes so found dead.';
