-- ticketiq.release_run(run, epoch, reason): hand a run over without a loss.
--
-- A process shutting down (SIGTERM) releases each run it holds at a step
-- boundary: the run becomes 'claimed' at epoch + 1 without counting a loss,
-- and channel ticketiq_resume is NOTIFYed so another process adopts it at
-- once instead of waiting for the lease to lapse.  p_outcomes (call id ->
-- outcome) records the results of the last step's calls that this process
-- already has, so the adopter carries them on instead of settling them as
-- calls in doubt.  Fenced (ticketiq._fence).
-- Limits:
--   p_run_id    the run
--   p_epoch     the writer's epoch
--   p_reason    null ('shutdown'), or at most 2000 characters
--   p_outcomes  a JSON object of call id -> outcome
-- SQLSTATEs: TQ004 (bad reason or outcomes), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence).
create or replace function ticketiq.release_run(
    p_run_id uuid,
    p_epoch bigint,
    p_reason text default 'shutdown',
    p_outcomes jsonb default '{}'
)
returns table (
    run_id uuid,
    epoch bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
begin
    perform ticketiq._require_text('reason', p_reason, 2000, true, 0);
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;
    if p_outcomes is null or jsonb_typeof(p_outcomes) <> 'object' then
        raise exception 'outcomes must be a JSON object of call id -> outcome'
            using errcode = 'TQ004';
    end if;

    update ticketiq.calls as c
    set state = case when c.state = 'pending' and c.classification <> 'read'
            then 'settled' else 'done' end,
        settlement = case when c.state = 'pending' and c.classification <> 'read'
            then 'skipped' else 'made' end,
        outcome = p_outcomes -> c.call_id,
        finished_at = v_now,
        finished_epoch = p_epoch
    where c.run_id = p_run_id
        and c.step = v_run.last_step
        and c.state in ('pending', 'in_doubt')
        and p_outcomes ? c.call_id;

    update ticketiq.runs as r
    set status = 'claimed',
        epoch = r.epoch + 1,
        claim_reason = 'released',
        lease_holder = null,
        lease_expires_at = null,
        updated_at = v_now
    where r.run_id = p_run_id;

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.released', p_run_id, p_epoch + 1, v_run.lease_holder,
        jsonb_build_object('reason', coalesce(p_reason, 'shutdown'), 'step', v_run.last_step));
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run_id, 'released', v_run.last_step, p_epoch + 1,
        jsonb_build_object('reason', coalesce(p_reason, 'shutdown')), v_now);
    perform pg_notify('ticketiq_resume', p_run_id::text);

    return query select p_run_id, p_epoch + 1;
end;
$$;

comment on function ticketiq.release_run(uuid, bigint, text, jsonb) is
'Hand a held run back (claimed, epoch + 1, no loss counted, known outcomes kept) and NOTIFY ticketiq_resume; used at graceful shutdown. Fenced.';
