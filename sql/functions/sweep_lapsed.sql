-- ticketiq.sweep_lapsed(sweeper, max losses, limit): claim every lapsed run once.
--
-- For each running run whose lease expired by the database clock, in one
-- transaction: a compare-and-swap on the epoch it saw raises the epoch by
-- one (I2), so of two racing sweeps exactly one claims it (I3); the loss is
-- counted (I4); the run becomes 'claimed' for a resume worker to adopt, and
-- channel ticketiq_resume is NOTIFYed with its run id; a run now lost more
-- than p_max_losses times — or one not written ahead (runs.durable false) —
-- is failed instead, with the reason, its transcript and entry told and the
-- failure audited.  Rows locked by a racing sweep are skipped.
-- Only the partial index of running runs is read, so the cost does not grow
-- with the finished runs kept.  Returns one row per run claimed or failed.
-- The claim itself is ticketiq._claim_lapsed (kind 'run'), the one claim of
-- the lease machine, shared with sweep_jobs, take_over_child and
-- watch_processes.
-- Limits:
--   p_sweeper     1..512
--   p_max_losses  >= 0
--   p_limit       >= 1
-- SQLSTATEs: TQ004 (bad sweeper, max losses or limit).
create or replace function ticketiq.sweep_lapsed(
    p_sweeper text,
    p_max_losses integer default 2,
    p_limit integer default 1000
)
returns table (
    run_id uuid,
    epoch bigint,
    loss_count integer,
    status text,
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
    if p_max_losses is null or p_max_losses < 0 or p_limit is null or p_limit < 1 then
        raise exception 'max_losses must be >= 0 and limit >= 1' using errcode = 'TQ004';
    end if;

    return query
    select c.id, c.epoch, c.losses, c.state, c.lapsed_holder, c.lapsed_at
    from ticketiq._claim_lapsed('run', p_sweeper, p_max_losses, p_limit, null, '{}'::jsonb) as c;
end;
$$;

comment on function ticketiq.sweep_lapsed(text, integer, integer) is
'Claim each running run whose lease lapsed exactly once (epoch CAS), count the loss, fail runs lost more than p_max_losses times, NOTIFY ticketiq_resume.';
