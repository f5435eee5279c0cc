-- ticketiq.claim_job(holder, ttl, kinds): take the oldest queued job to run it.
--
-- Picks the oldest queued job (of one of p_kinds, or of any kind when
-- p_kinds is null) with FOR UPDATE SKIP LOCKED, so of several job workers
-- exactly one claims it, raises its epoch by one, gives p_holder its lease
-- for p_ttl_seconds from now by the database clock and returns in the same
-- statement what the worker needs: kind, payload, the progress a previous
-- attempt checkpointed (empty for a fresh job) and the attempts lost so
-- far.  Returns no row when nothing is queued.
-- Limits:
--   p_holder       1..512
--   p_ttl_seconds  seconds in (0, 1e9]
--   p_kinds        null (any kind), or a one-dimensional, non-empty array of
--                  non-empty kinds (compared only, not stored)
-- SQLSTATEs: TQ004 (bad holder, TTL or kinds).
create or replace function ticketiq.claim_job(
    p_holder text,
    p_ttl_seconds double precision,
    p_kinds text[] default null
)
returns table (
    job_id uuid,
    kind text,
    resumable boolean,
    payload jsonb,
    progress jsonb,
    epoch bigint,
    attempts integer,
    lease_expires_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    if p_kinds is not null and (
        array_ndims(p_kinds) is distinct from 1
        or array_position(p_kinds, null) is not null
        or array_position(p_kinds, '') is not null
    ) then
        raise exception 'kinds must be null or a one-dimensional array of non-empty kinds'
            using errcode = 'TQ004';
    end if;

    return query
    with picked as (
        select j.job_id
        from ticketiq.jobs as j
        where j.state = 'queued' and (p_kinds is null or j.kind = any(p_kinds))
        order by j.created_at
        limit 1
        for update skip locked
    )

    update ticketiq.jobs as j
    set state = 'running',
        epoch = j.epoch + 1,
        holder = p_holder,
        lease_expires_at = v_now + v_ttl,
        updated_at = v_now
    from picked as p
    where j.job_id = p.job_id
    returning j.job_id, j.kind, j.resumable, j.payload, j.progress, j.epoch, j.attempts,
        j.lease_expires_at;
end;
$$;

comment on function ticketiq.claim_job(text, double precision, text[]) is
'Claim the oldest queued job of p_kinds (SKIP LOCKED, epoch + 1, lease to p_holder) with its checkpointed progress. TQ004 bad input.';
