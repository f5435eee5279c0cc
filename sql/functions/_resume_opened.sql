-- ticketiq._resume_opened(claim reason, step, losses, settlements,
-- complete): the event and detail of a resume's one audit row.
--
-- Shared by the adoption that writes the row (ticketiq._adopt, for a batch
-- of runs at once) and ticketiq.record_resume (a row found missing): the
-- event is agent.run.crash_resumed after a loss (the lease lapsed, or the
-- holder's session ended: I14), agent.run.resumed after a graceful
-- release or a wake-up; the detail names the step, how many times the run
-- was lost, why it was up for adoption, the settlements so far and whether
-- every call of the step has one.  Writes nothing; raises nothing.
-- Limits:
--   p_claim_reason  the run's claim_reason (null: its lease lapsed)
--   p_settlements   a JSON array (checked by the caller)
create or replace function ticketiq._resume_opened(
    p_claim_reason text,
    p_step integer,
    p_loss_count integer,
    p_settlements jsonb,
    p_complete boolean,
    out o_event text,
    out o_detail jsonb
)
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select
        case coalesce(p_claim_reason, 'lease_lapsed')
            when 'lease_lapsed' then 'agent.run.crash_resumed'
            when 'session_ended' then 'agent.run.crash_resumed'
            else 'agent.run.resumed'
        end,
        jsonb_build_object(
            'step', p_step,
            'loss_count', p_loss_count,
            'reason', coalesce(p_claim_reason, 'lease_lapsed'),
            'settlements', p_settlements,
            'complete', p_complete
        );
$$;

comment on function ticketiq._resume_opened(text, integer, integer, jsonb, boolean) is
'Internal: a resume audit row''s event (agent.run.crash_resumed after a loss, else agent.run.resumed) and detail (step, loss_count, reason, settlements, complete).';
