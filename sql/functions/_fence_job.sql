-- ticketiq._fence_job(job, epoch, now): lock a job for a fenced write.
--
-- Every write on behalf of a job's attempt (checkpoint, finish, failure)
-- goes through here first, as a run's writes go through ticketiq._fence.
-- It locks the job's row and raises, changing nothing:
--   TQ010 unknown_job      no such job
--   TQ002 fenced           the job's epoch is not the writer's: swept or claimed again
--   TQ006 not_running      the job is queued, completed or failed
--   TQ003 lease_lapsed     the writer's lease expired by the database clock
create or replace function ticketiq._fence_job(
    p_job_id uuid,
    p_epoch bigint,
    p_now timestamptz
)
returns ticketiq.jobs
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_job ticketiq.jobs;
begin
    select j.* into v_job
    from ticketiq.jobs as j
    where j.job_id = p_job_id
    for update;

    if not found then
        raise exception 'unknown job %', p_job_id
            using errcode = 'TQ010';
    end if;
    if p_epoch is distinct from v_job.epoch then
        raise exception 'job % is at epoch %, the writer holds epoch %', p_job_id, v_job.epoch, p_epoch
            using errcode = 'TQ002',
                  hint = 'The job was swept or claimed again; this attempt must stop.';
    end if;
    if v_job.state <> 'running' then
        raise exception 'job % is %, not running', p_job_id, v_job.state
            using errcode = 'TQ006';
    end if;
    -- The clock after the row lock: waiting for it must not stretch a lease.
    if v_job.lease_expires_at <= greatest(p_now, ticketiq.now()) then
        raise exception 'lease job:% lapsed at %', p_job_id, v_job.lease_expires_at
            using errcode = 'TQ003',
                  hint = 'The lease ran out by the database clock; this attempt must stop.';
    end if;
    return v_job;
end;
$$;

comment on function ticketiq._fence_job(uuid, bigint, timestamptz) is
'Internal: lock job for a fenced write; raise TQ010 unknown, TQ002 stale epoch, TQ006 not running, TQ003 lease lapsed.';
