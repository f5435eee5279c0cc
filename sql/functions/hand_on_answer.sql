-- ticketiq.hand_on_answer(run, epoch): hand a sealed answer on, at most once.
--
-- Marks the answer handed on and completes the run (lease released, the
-- answer written to its transcript, its entry's outcome recorded,
-- audited agent.run.completed) in one statement, and returns the answer for the caller to deliver.  A second
-- hand-on finds the run completed and raises TQ006 run_not_running (and
-- TQ005 answer_sealed should the run still be running with the answer
-- handed on); a run with no sealed answer raises TQ007 step_conflict.  Fenced (TQ001/TQ002/TQ003/
-- TQ006), so only the run's current attempt can hand it on.
-- Limits:
--   p_run_id  the run
--   p_epoch   the writer's epoch
-- SQLSTATEs: TQ001, TQ002, TQ003, TQ006 (ticketiq._fence), TQ005 handed on
--   already, TQ007 no sealed answer.
create or replace function ticketiq.hand_on_answer(
    p_run_id uuid,
    p_epoch bigint
)
returns table (
    run_id uuid,
    step integer,
    body jsonb,
    seal text,
    seal_key_id text,
    handed_on_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
    v_answer ticketiq.answers;
begin
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;

    select a.* into v_answer from ticketiq.answers as a where a.run_id = p_run_id for update;
    if not found then
        raise exception 'run % has no sealed answer to hand on', p_run_id using errcode = 'TQ007';
    end if;
    if v_answer.handed_on_at is not null then
        raise exception 'the answer of run % was already handed on at %', p_run_id, v_answer.handed_on_at
            using errcode = 'TQ005';
    end if;

    update ticketiq.answers as a
    set handed_on_at = v_now,
        handed_on_epoch = p_epoch
    where a.run_id = p_run_id;

    update ticketiq.runs as r
    set status = 'completed',
        lease_holder = null,
        lease_expires_at = null,
        finished_at = v_now,
        updated_at = v_now
    where r.run_id = p_run_id;

    insert into ticketiq.transcript_entries (run_id, kind, body, at)
    values (p_run_id, 'answer', jsonb_build_object('step', v_answer.step, 'answer', v_answer.body), v_now);
    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.completed', p_run_id, p_epoch, v_run.lease_holder,
        jsonb_build_object('step', v_answer.step, 'loss_count', v_run.loss_count));
    perform ticketiq._finish_entry(p_run_id, 'answered', v_answer.body, v_now);
    perform pg_notify('ticketiq_run_finished', p_run_id::text);

    return query select p_run_id, v_answer.step, v_answer.body, v_answer.seal, v_answer.seal_key_id, v_now;
end;
$$;

comment on function ticketiq.hand_on_answer(uuid, bigint) is
'Hand a sealed answer on at most once and complete the run (transcript, audit, lease released). Fenced; TQ005 if already handed on.';
