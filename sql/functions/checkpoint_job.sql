-- ticketiq.checkpoint_job(job, epoch, progress): record a job's progress.
--
-- Replaces the job's progress with p_progress (a JSON object: pages done,
-- epochs trained, ...) while the writer still holds the job at p_epoch and
-- its lease has not lapsed by the database clock, so a worker that only
-- stalled and was swept can record nothing more.  A resumable job queued
-- again after a loss restarts from the last progress recorded.  The lease
-- is not extended: ticketiq.renew_leases (kind job) does that.  Fenced
-- (ticketiq._fence, which reads the clock after the job's row lock).
-- Limits:
--   p_job_id    the job
--   p_epoch     the writer's epoch
--   p_progress  a JSON object
-- SQLSTATEs: TQ004 (progress not an object), TQ010 unknown job, TQ002 stale
--   epoch, TQ006 not running, TQ003 lease lapsed.
create or replace function ticketiq.checkpoint_job(
    p_job_id uuid,
    p_epoch bigint,
    p_progress jsonb
)
returns table (
    job_id uuid,
    epoch bigint,
    checkpointed_at timestamptz,
    lease_expires_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_job ticketiq.jobs;
begin
    if p_progress is null or jsonb_typeof(p_progress) <> 'object' then
        raise exception 'progress must be a JSON object' using errcode = 'TQ004';
    end if;
    v_job := (ticketiq._fence('job', p_job_id, p_epoch, v_now)).job;

    update ticketiq.jobs as j
    set progress = p_progress,
        updated_at = v_now
    where j.job_id = p_job_id;

    return query select p_job_id, p_epoch, v_now, v_job.lease_expires_at;
end;
$$;

comment on function ticketiq.checkpoint_job(uuid, bigint, jsonb) is
'Record a running job''s progress (a JSON object). Fenced: TQ010 unknown, TQ002 stale epoch, TQ006 not running, TQ003 lapsed; TQ004 bad progress.';
