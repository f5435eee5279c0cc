-- ticketiq.restart_run(run, actor, reason): a person gives a failed or stopped run another go.
--
-- The run goes on from its last written step through the one resume path
-- every run takes: it is made 'claimed' again (epoch + 1, so an attempt of
-- it still alive somewhere is fenced, I1/I2; claim_reason 'restarted') and
-- channel ticketiq_resume is NOTIFYed, so a resume worker adopts it
-- (ticketiq.adopt_run), verifies its seals (I9) and settles the calls its
-- last step left by the five rules, never blindly sending a write again
-- (I6, I7).  The restart resets what ended the run: its loss count (I4
-- counts from here), its failure reason and end, its Stop, and the failed
-- attempts counted at its steps (ticketiq.attempts: a fresh retry budget).
-- Its entry is running again, so its outcome is recorded when the run ends
-- again.  Audited agent.run.restarted with who, why and what was reset;
-- the transcript is told.  Refused, nothing changed: a run that is not
-- failed or stopped (TQ006), one not written ahead (TQ006: it has no
-- checkpoint to go on from, and its calls were never marked), one whose
-- answer is sealed (TQ005), a child run whose parent is still in flight
-- (TQ006: the parent asks again by its delegation key).
-- Limits:
--   p_run_id  the run
--   p_actor   1..512
--   p_reason  null, or at most 2000 characters
-- SQLSTATEs: TQ004 (bad actor or reason), TQ001 unknown run, TQ005 answer
--   sealed, TQ006 not failed or stopped, not written ahead, or its parent in flight.
create or replace function ticketiq.restart_run(
    p_run_id uuid,
    p_actor text,
    p_reason text default null
)
returns table (
    run_id uuid,
    status text,
    epoch bigint,
    step integer,
    previous_status text,
    previous_reason text,
    losses_reset integer,
    attempts_reset integer
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
    v_attempts integer;
begin
    perform ticketiq._require_text('actor', p_actor, 512);
    perform ticketiq._require_text('reason', p_reason, 2000, true, 0);
    select r.* into v_run from ticketiq.runs as r where r.run_id = p_run_id for update;
    if not found then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
    if v_run.status not in ('failed', 'stopped') then
        raise exception 'run % is %: only a failed or stopped run is restarted', p_run_id, v_run.status
            using errcode = 'TQ006';
    end if;
    if not v_run.durable then
        raise exception 'run % was not written ahead: it has no step to go on from', p_run_id
            using errcode = 'TQ006';
    end if;
    if exists (select 1 from ticketiq.answers as a where a.run_id = p_run_id) then
        raise exception 'run % has a sealed answer', p_run_id using errcode = 'TQ005';
    end if;
    if exists (
        select 1 from ticketiq.runs as p
        where p.run_id = v_run.parent_run_id and p.finished_at is null
    ) then
        raise exception 'run % is a child of run %, still in flight: its parent asks for it again',
            p_run_id, v_run.parent_run_id using errcode = 'TQ006';
    end if;

    with gone as (
        delete from ticketiq.attempts as t where t.run_id = p_run_id returning 1
    )

    select count(*)::integer into v_attempts from gone;

    update ticketiq.runs as r
    set status = 'claimed',
        epoch = r.epoch + 1,
        loss_count = 0,
        failure_reason = null,
        finished_at = null,
        stop_requested_at = null,
        stop_requested_by = null,
        wait_key = null,
        claim_reason = 'restarted',
        updated_at = v_now
    where r.run_id = p_run_id;

    update ticketiq.entries as e
    set state = 'running',
        outcome = null,
        finished_at = null
    where e.run_id = p_run_id and e.state in ('failed', 'stopped');

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.restarted', p_run_id, v_run.epoch + 1, p_actor,
        jsonb_build_object(
            'reason', p_reason,
            'step', v_run.last_step,
            'previous_status', v_run.status,
            'previous_reason', v_run.failure_reason,
            'losses_reset', v_run.loss_count,
            'attempts_reset', v_attempts
        ));
    insert into ticketiq.transcript_entries (run_id, kind, body, at)
    values (p_run_id, 'note', jsonb_build_object(
        'restarted_by', p_actor, 'reason', p_reason, 'step', v_run.last_step), v_now);
    perform pg_notify('ticketiq_resume', p_run_id::text);

    return query select p_run_id, 'claimed'::text, (v_run.epoch + 1)::bigint, v_run.last_step::integer,
        v_run.status::text, v_run.failure_reason, v_run.loss_count::integer, v_attempts;
end;
$$;

comment on function ticketiq.restart_run(uuid, text, text) is
'A person''s restart of a failed or stopped run: claimed again (epoch + 1, losses and attempts reset), adopted and settled by the one resume path; audited agent.run.restarted. TQ001, TQ004, TQ005, TQ006.';
