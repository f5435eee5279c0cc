-- ticketiq.get_job(job): a background job's state as the API shows it.
--
-- Kind, state, payload, progress, result, epoch, holder and lease expiry,
-- attempts lost, idempotency key and failure reason.
-- Limits:
--   p_job_id  any job id
-- SQLSTATEs: TQ010 unknown job.
create or replace function ticketiq.get_job(p_job_id uuid)
returns table (
    job_id uuid,
    kind text,
    resumable boolean,
    state text,
    payload jsonb,
    progress jsonb,
    result jsonb,
    epoch bigint,
    holder text,
    lease_expires_at timestamptz,
    attempts integer,
    idempotency_key text,
    failure_reason text,
    created_at timestamptz,
    updated_at timestamptz,
    finished_at timestamptz
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select j.job_id, j.kind, j.resumable, j.state, j.payload, j.progress, j.result, j.epoch,
        j.holder, j.lease_expires_at, j.attempts, j.idempotency_key, j.failure_reason,
        j.created_at, j.updated_at, j.finished_at
    from ticketiq.jobs as j
    where j.job_id = p_job_id;
    if not found then
        raise exception 'unknown job %', p_job_id using errcode = 'TQ010';
    end if;
end;
$$;

comment on function ticketiq.get_job(uuid) is
'A background job''s state, progress, result, lease, attempts lost and failure reason. TQ010 unknown.';
