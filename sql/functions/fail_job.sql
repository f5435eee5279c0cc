-- ticketiq.fail_job(job, epoch, reason): fail a job with its reason.
--
-- The attempt that holds the job at p_epoch, unlapsed, marks it 'failed'
-- with p_reason (a handler's error: bad payload, vendor refused, ...),
-- releases its lease and audits job.failed.  A failed job is never run
-- again; it must be enqueued anew.  Fenced (ticketiq._fence).
-- Limits:
--   p_job_id  the job
--   p_epoch   the writer's epoch
--   p_reason  1..2000
-- SQLSTATEs: TQ004 (bad reason), TQ010 unknown job, TQ002 stale epoch,
--   TQ006 not running, TQ003 lease lapsed.
create or replace function ticketiq.fail_job(
    p_job_id uuid,
    p_epoch bigint,
    p_reason text
)
returns table (
    job_id uuid,
    state text,
    finished_at timestamptz
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
    perform ticketiq._require_text('reason', p_reason, 2000);
    v_job := (ticketiq._fence('job', p_job_id, p_epoch, v_now)).job;

    update ticketiq.jobs as j
    set state = 'failed',
        failure_reason = p_reason,
        holder = null,
        lease_expires_at = null,
        finished_at = v_now,
        updated_at = v_now
    where j.job_id = p_job_id;

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'job.failed', null, p_epoch, v_job.holder,
        jsonb_build_object('job_id', p_job_id, 'kind', v_job.kind, 'reason', p_reason,
            'attempts', v_job.attempts));

    return query select p_job_id, 'failed'::text, v_now;
end;
$$;

comment on function ticketiq.fail_job(uuid, bigint, text) is
'Fail a running job with its reason (lease released, job.failed audited). Fenced: TQ010/TQ002/TQ006/TQ003; TQ004 empty reason.';
