-- ticketiq.renew_job_leases(holder, job ids, epochs, ttl): one renewal per job worker tick.
--
-- Renews, in one statement, the lease of every listed job that the holder
-- still runs at the listed epoch and whose lease has not lapsed by the
-- database clock, to p_ttl_seconds from now.  Returns one row per listed
-- job: held=false for each the worker no longer holds (swept, claimed
-- again, finished, unknown), so it stops that job at once.  A lapsed lease
-- is never revived: the sweep takes the job back.  The jobs' rows are
-- locked first (in job id order) and the clock read after: a renewal that
-- waited for a row past the lease's expiry answers held=false.
-- Limits:
--   p_holder       1..512
--   p_job_ids      a one-dimensional array without nulls, as long as p_epochs
--   p_epochs       a one-dimensional array without nulls
--   p_ttl_seconds  seconds in (0, 1e9]
-- SQLSTATEs: TQ004 (bad holder, arrays or TTL).
create or replace function ticketiq.renew_job_leases(
    p_holder text,
    p_job_ids uuid[],
    p_epochs bigint[],
    p_ttl_seconds double precision
)
returns table (
    job_id uuid,
    epoch bigint,
    held boolean,
    lease_expires_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz;
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    if p_job_ids is null or p_epochs is null
        or coalesce(array_ndims(p_job_ids), 1) <> 1
        or coalesce(array_ndims(p_epochs), 1) <> 1
        or cardinality(p_job_ids) <> cardinality(p_epochs)
        or array_position(p_job_ids, null) is not null
        or array_position(p_epochs, null) is not null then
        raise exception 'job ids and epochs must be one-dimensional arrays of equal length without nulls'
            using errcode = 'TQ004';
    end if;

    -- The rows first, in job id order, then the clock.
    perform 1
    from ticketiq.jobs as j
    where j.job_id = any(p_job_ids) and j.state = 'running' and j.holder = p_holder
    order by j.job_id
    for no key update;
    v_now := ticketiq.now();

    return query
    with listed as (
        select u.job_id, u.epoch
        from unnest(p_job_ids, p_epochs) as u (job_id, epoch)
    ),

    renewed as (
        update ticketiq.jobs as j
        set lease_expires_at = v_now + v_ttl
        from listed as l
        where j.job_id = l.job_id
            and j.epoch = l.epoch
            and j.state = 'running'
            and j.holder = p_holder
            and j.lease_expires_at > v_now
        returning j.job_id, j.epoch, j.lease_expires_at
    )

    select l.job_id, l.epoch, n.job_id is not null, n.lease_expires_at
    from listed as l
    left join renewed as n on l.job_id = n.job_id and l.epoch = n.epoch;
end;
$$;

comment on function ticketiq.renew_job_leases(text, uuid[], bigint[], double precision) is
'Renew every listed job lease the holder still holds unlapsed, in one statement; held=false for each it no longer holds. TQ004 bad input.';
