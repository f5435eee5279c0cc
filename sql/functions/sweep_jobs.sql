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
-- of running jobs is read.  Returns one row per job taken back.  The claim
-- itself is ticketiq._claim_lapsed (kind 'job'), the one claim of the lease
-- machine, shared with sweep_lapsed and watch_processes.
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
begin
    perform ticketiq._require_text('sweeper', p_sweeper, 512);
    if p_limit is null or p_limit < 1 or p_max_losses is null or p_max_losses < 0 then
        raise exception 'limit must be >= 1 and max_losses >= 0' using errcode = 'TQ004';
    end if;

    return query
    select c.id, c.job_kind, c.epoch, c.losses, c.state, c.lapsed_holder, c.lapsed_at
    from ticketiq._claim_lapsed('job', p_sweeper, p_max_losses, p_limit, null, '{}'::jsonb) as c;
end;
$$;

comment on function ticketiq.sweep_jobs(text, integer, integer) is
'Take back each running job whose lease lapsed (epoch CAS, attempts + 1): resumable ones queued again with their progress (NOTIFY ticketiq_job), others failed ''interrupted''.';
