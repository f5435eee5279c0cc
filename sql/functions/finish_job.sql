-- ticketiq.finish_job(job, epoch, result): complete a job with its result.
--
-- The attempt that holds the job at p_epoch, unlapsed, marks it
-- 'completed' with p_result (any JSON value), releases its lease and
-- audits job.completed.  The progress is kept.  Fenced (ticketiq._fence).
-- Limits:
--   p_job_id  the job
--   p_epoch   the writer's epoch
--   p_result  any JSON value (JSON null too), not SQL null
-- SQLSTATEs: TQ004 (SQL null result), TQ010 unknown job, TQ002 stale epoch,
--   TQ006 not running (finished already), TQ003 lease lapsed.
create or replace function ticketiq.finish_job(
    p_job_id uuid,
    p_epoch bigint,
    p_result jsonb
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
    if p_result is null then
        raise exception 'a finished job needs a result (JSON null is fine)' using errcode = 'TQ004';
    end if;
    v_job := (ticketiq._fence('job', p_job_id, p_epoch, v_now)).job;

    update ticketiq.jobs as j
    set state = 'completed',
        result = p_result,
        holder = null,
        lease_expires_at = null,
        finished_at = v_now,
        updated_at = v_now
    where j.job_id = p_job_id;

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'job.completed', null, p_epoch, v_job.holder,
        jsonb_build_object('job_id', p_job_id, 'kind', v_job.kind, 'attempts', v_job.attempts));

    return query select p_job_id, 'completed'::text, v_now;
end;
$$;

comment on function ticketiq.finish_job(uuid, bigint, jsonb) is
'Complete a running job with its result (lease released, job.completed audited). Fenced: TQ010/TQ002/TQ006/TQ003; TQ004 null result.';
