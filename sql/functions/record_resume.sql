-- ticketiq.record_resume(run, epoch, settlements): audit one resume as it settles.
--
-- Every resume has one audit row from the moment it begins: agent.run.
-- crash_resumed after a loss (I14), agent.run.resumed after a graceful
-- release or a wake-up, with the step, how many times the run was lost and
-- why it was up for adoption.  The adoption writes it (ticketiq._adopt,
-- with no settlements), so a resumer that dies before it settled anything
-- still leaves it.  The adopter then calls this as each call the last step
-- left is settled: in one statement each settlement is recorded on its
-- call (state 'settled', or 'done' for a call made normally by this
-- attempt) and added to the audit row, so a resumer that dies
-- mid-settlement leaves a row naming the calls it had settled, and the
-- next resume finds them settled instead of in doubt.  Once every call of
-- the step has a settlement the row says complete = true and the
-- transcript is told.  p_settlements is a JSON array of {call_id,
-- settlement, outcome?}; each call must belong to the last step.  A call
-- an earlier attempt already finished keeps its record unchanged (its
-- settlement says 'already_made' when the lost attempt made it: not sent
-- again, and told apart from a call this resume made); a read
-- has no row (its settlement is in the audit row only).  Fenced
-- (ticketiq._fence).  A settlement already recorded (a statement sent
-- again after its commit went unseen) changes nothing; another settlement
-- of a call this resume already settled raises TQ007.
-- Limits:
--   p_run_id       the run
--   p_epoch        the adopting epoch
--   p_settlements  a JSON array of {call_id, settlement, outcome?} objects
-- SQLSTATEs: TQ004 (malformed settlements), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence), TQ007 a call this resume settled otherwise already,
--   TQ008 no such call.
create or replace function ticketiq.record_resume(
    p_run_id uuid,
    p_epoch bigint,
    p_settlements jsonb default '[]'
)
returns table (
    run_id uuid,
    step integer,
    loss_count integer,
    audit_id bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select r.run_id, r.step, r.loss_count, r.audit_id
    from ticketiq._record_resume(p_run_id, p_epoch, p_settlements, ticketiq.now()) as r;
end;
$$;

comment on function ticketiq.record_resume(uuid, bigint, jsonb) is
'Audit a resume as it settles: the one agent.run.crash_resumed (or resumed) row of this epoch, written at adoption, gains each settlement as it is recorded on its call, and says complete once every call of the last step is settled. Fenced; a settlement again changes nothing, another settlement of a settled call TQ007.';
