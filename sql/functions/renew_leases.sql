-- ticketiq.renew_leases(holder, ids, epochs, ttl, kind): one renewal per process tick.
--
-- The one renewal of the lease machine, for runs (p_kind 'run', a process's
-- lease book) and jobs (p_kind 'job', a job worker's tick).  Renews, in one
-- statement, the lease of every listed run or job that the holder still
-- holds at the listed epoch and whose lease has not lapsed by the database
-- clock, to p_ttl_seconds from now.  Returns one row per listed lease:
-- held=false for each the process no longer holds (taken over, swept,
-- lapsed, finished, unknown), so it stops that run or job at once
-- (invariant I12).  A lapsed lease is never revived: the sweep claims it.
-- The rows are locked first (in id order) and the clock read after: a
-- renewal that waited for a row past the lease's expiry answers held=false
-- (I1, I11).  Also records the process as seen.  Each kind's statement is
-- static (no dynamic SQL): the lease lives on the kind's own row.
--
-- Planned afresh on each call, never by a nested loop: a process holds
-- thousands of leases, and a cached generic plan does not know how many
-- ids are listed (it guesses 10), while a new holder's runs are not in
-- the statistics yet (1 row guessed).  With those guesses the planner
-- joined the runs to the listed ids by a nested loop, comparing every held
-- run with every listed one: 10,000 leases took 20 s (held x listed =
-- 10^8 comparisons), longer than the TTL, so every lease lapsed.  A custom
-- plan sees the arrays' length, and a hash or merge join keeps the cost
-- linear whatever the statistics say (bench section 8, docs/performance.md).
-- Limits:
--   p_holder       1..512
--   p_ids          a one-dimensional array without nulls, as long as p_epochs
--   p_epochs       a one-dimensional array without nulls
--   p_ttl_seconds  seconds in (0, 1e9]
--   p_kind         one of run, job
-- SQLSTATEs: TQ004 (bad holder, arrays, TTL or kind).
create or replace function ticketiq.renew_leases(
    p_holder text,
    p_ids uuid[],
    p_epochs bigint[],
    p_ttl_seconds double precision,
    p_kind text
)
returns table (
    lease_id uuid,
    epoch bigint,
    held boolean,
    lease_expires_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_custom_plan
set enable_nestloop = off
as $$
#variable_conflict use_column
declare
    v_now timestamptz;
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    if p_ids is null or p_epochs is null
        or coalesce(array_ndims(p_ids), 1) <> 1
        or coalesce(array_ndims(p_epochs), 1) <> 1
        or cardinality(p_ids) <> cardinality(p_epochs)
        or array_position(p_ids, null) is not null
        or array_position(p_epochs, null) is not null then
        raise exception 'ids and epochs must be one-dimensional arrays of equal length without nulls'
            using errcode = 'TQ004';
    end if;
    if p_kind is null or p_kind not in ('run', 'job') then
        raise exception 'kind must be run or job, got %', coalesce(left(p_kind, 20), 'null')
            using errcode = 'TQ004';
    end if;

    -- The rows first, in id order (no deadlock with another renewal), then
    -- the clock: the time after any wait decides.
    if p_kind = 'run' then
        perform 1
        from ticketiq.runs as r
        where r.run_id = any(p_ids) and r.status = 'running' and r.lease_holder = p_holder
        order by r.run_id
        for no key update;
    else
        perform 1
        from ticketiq.jobs as j
        where j.job_id = any(p_ids) and j.state = 'running' and j.holder = p_holder
        order by j.job_id
        for no key update;
    end if;
    v_now := ticketiq.now();

    update ticketiq.processes as p
    set last_seen_at = v_now
    where p.process_id = p_holder;

    if p_kind = 'run' then
        return query
        with listed as (
            select u.id, u.epoch
            from unnest(p_ids, p_epochs) as u (id, epoch)
        ),

        renewed as (
            update ticketiq.runs as r
            set lease_expires_at = v_now + v_ttl
            from listed as l
            where r.run_id = l.id
                and r.epoch = l.epoch
                and r.status = 'running'
                and r.lease_holder = p_holder
                and r.lease_expires_at > v_now
            returning r.run_id, r.epoch, r.lease_expires_at
        )

        select l.id, l.epoch, n.run_id is not null, n.lease_expires_at
        from listed as l
        left join renewed as n on l.id = n.run_id and l.epoch = n.epoch;
    else
        return query
        with listed as (
            select u.id, u.epoch
            from unnest(p_ids, p_epochs) as u (id, epoch)
        ),

        renewed as (
            update ticketiq.jobs as j
            set lease_expires_at = v_now + v_ttl
            from listed as l
            where j.job_id = l.id
                and j.epoch = l.epoch
                and j.state = 'running'
                and j.holder = p_holder
                and j.lease_expires_at > v_now
            returning j.job_id, j.epoch, j.lease_expires_at
        )

        select l.id, l.epoch, n.job_id is not null, n.lease_expires_at
        from listed as l
        left join renewed as n on l.id = n.job_id and l.epoch = n.epoch;
    end if;
end;
$$;

comment on function ticketiq.renew_leases(text, uuid[], bigint[], double precision, text) is
'The one renewal of runs'' (p_kind run) and jobs'' (p_kind job) leases: renew every listed lease the holder still holds unlapsed (clock read after the row locks), in one statement; held=false for each it no longer holds. TQ004 bad input.';
