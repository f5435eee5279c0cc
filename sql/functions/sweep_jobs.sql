-- ticketiq.sweep_jobs(sweeper, limit): take back every running job whose lease lapsed.
--
-- For each running job whose lease expired by the database clock, in one
-- statement: a compare-and-swap on the epoch it saw raises the epoch by
-- one, so the worker that lost it can write nothing more and of two racing
-- sweeps exactly one takes it; the lost attempt is counted (attempts + 1);
-- the lease is cleared.  A resumable job (source sync, fine-tuning) is
-- queued again with its progress kept, audited job.requeued, and channel
-- ticketiq_job is NOTIFYed with its id so any process's job worker claims
-- it; any other job (classifier training, red-team run) is failed
-- 'interrupted: ...', audited job.interrupted, and never runs again; so is
-- a resumable job lost more than p_max_losses times ('lost N times').  Rows
-- locked by a racing sweep or a claim are skipped.  Only the partial index
-- of running jobs is read.  Returns one row per job taken back.
-- Limits:
--   p_sweeper     1..512
--   p_limit       >= 1
--   p_max_losses  >= 0
-- SQLSTATEs: TQ004 (bad sweeper, limit or max losses).
create or replace function ticketiq.sweep_jobs(
    p_sweeper text,
    p_limit integer default 1000,
    p_max_losses integer default 2
)
returns table (
    job_id uuid,
    kind text,
    epoch bigint,
    attempts integer,
    state text,
    lapsed_holder text,
    lapsed_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_row record;
begin
    perform ticketiq._require_text('sweeper', p_sweeper, 512);
    if p_limit is null or p_limit < 1 or p_max_losses is null or p_max_losses < 0 then
        raise exception 'limit must be >= 1 and max_losses >= 0' using errcode = 'TQ004';
    end if;

    for v_row in
        with lapsed as (
            select j.job_id, j.epoch, j.holder, j.lease_expires_at
            from ticketiq.jobs as j
            where j.state = 'running' and j.lease_expires_at <= v_now
            order by j.lease_expires_at
            limit p_limit
            for update skip locked
        )

        update ticketiq.jobs as j
        set epoch = j.epoch + 1,
            attempts = j.attempts + 1,
            state = case
                when j.resumable and j.attempts + 1 <= p_max_losses then 'queued' else 'failed'
            end,
            failure_reason = case
                when not j.resumable
                    then format('interrupted: not resumable, lease lapsed at %s held by %s',
                        l.lease_expires_at, l.holder)
                when j.attempts + 1 > p_max_losses
                    then format('lost %s times (more than %s): lease lapsed at %s held by %s',
                        j.attempts + 1, p_max_losses, l.lease_expires_at, l.holder)
            end,
            finished_at = case
                when not j.resumable or j.attempts + 1 > p_max_losses then v_now
            end,
            holder = null,
            lease_expires_at = null,
            updated_at = v_now
        from lapsed as l
        where j.job_id = l.job_id
            and j.epoch = l.epoch
            and j.state = 'running'
            and j.lease_expires_at <= v_now
        returning j.job_id, j.kind, j.epoch, j.attempts, j.state, j.failure_reason, j.progress,
            l.holder, l.lease_expires_at
    loop
        if v_row.state = 'queued' then
            insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
            values (v_now, 'job.requeued', null, v_row.epoch, p_sweeper,
                jsonb_build_object(
                    'job_id', v_row.job_id,
                    'kind', v_row.kind,
                    'lapsed_holder', v_row.holder,
                    'lapsed_at', v_row.lease_expires_at,
                    'attempts', v_row.attempts,
                    'progress', v_row.progress
                ));
            perform pg_notify('ticketiq_job', v_row.job_id::text);
        else
            insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
            values (v_now, 'job.interrupted', null, v_row.epoch, p_sweeper,
                jsonb_build_object(
                    'job_id', v_row.job_id,
                    'kind', v_row.kind,
                    'lapsed_holder', v_row.holder,
                    'lapsed_at', v_row.lease_expires_at,
                    'attempts', v_row.attempts,
                    'reason', v_row.failure_reason
                ));
        end if;
        return query select v_row.job_id, v_row.kind, v_row.epoch, v_row.attempts, v_row.state,
            v_row.holder, v_row.lease_expires_at;
    end loop;
end;
$$;

comment on function ticketiq.sweep_jobs(text, integer, integer) is
'Take back each running job whose lease lapsed (epoch CAS, attempts + 1): resumable ones queued again with their progress (NOTIFY ticketiq_job), others failed ''interrupted''.';
