-- ticketiq.enqueue_job(kind, payload, resumable, idempotency key): queue a background job.
--
-- The new job is 'queued' at epoch 0 with empty progress, for any
-- process's job worker to claim (ticketiq.claim_job); channel ticketiq_job
-- is NOTIFYed with its id.  p_resumable says what happens when the
-- process running it dies: true (source syncs, fine-tuning) queues it
-- again with its progress kept, false (classifier training, red-team runs)
-- fails it 'interrupted'.  A repeated p_idempotency_key finds the existing
-- job, whatever its state, and changes nothing: created is false.
-- Limits:
--   p_kind             1..512
--   p_payload          a JSON object
--   p_resumable        true or false
--   p_idempotency_key  null, or 1..600
-- SQLSTATEs: TQ004 (bad kind, payload, resumable or key).
create or replace function ticketiq.enqueue_job(
    p_kind text,
    p_payload jsonb,
    p_resumable boolean,
    p_idempotency_key text default null
)
returns table (
    job_id uuid,
    created boolean,
    kind text,
    state text,
    created_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_job_id uuid;
begin
    perform ticketiq._require_text('kind', p_kind, 512);
    perform ticketiq._require_text('idempotency_key', p_idempotency_key, 600, true);
    if p_payload is null or jsonb_typeof(p_payload) <> 'object' then
        raise exception 'payload must be a JSON object' using errcode = 'TQ004';
    end if;
    if p_resumable is null then
        raise exception 'resumable must not be null' using errcode = 'TQ004';
    end if;

    insert into ticketiq.jobs as j (
        job_id, kind, resumable, payload, idempotency_key, created_at, updated_at
    ) values (
        gen_random_uuid(), p_kind, p_resumable, p_payload, p_idempotency_key, v_now, v_now
    )
    on conflict (idempotency_key) do nothing
    returning j.job_id into v_job_id;

    if v_job_id is null then
        -- The key was used before (or by a concurrent enqueue that won).
        return query
        select j.job_id, false, j.kind, j.state, j.created_at
        from ticketiq.jobs as j
        where j.idempotency_key = p_idempotency_key;
        return;
    end if;

    perform pg_notify('ticketiq_job', v_job_id::text);
    return query select v_job_id, true, p_kind, 'queued'::text, v_now;
end;
$$;

comment on function ticketiq.enqueue_job(text, jsonb, boolean, text) is
'Queue a background job (NOTIFY ticketiq_job); a repeated idempotency key returns the existing job (created=false). TQ004 bad input.';
