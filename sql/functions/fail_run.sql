-- ticketiq.fail_run(run, epoch, reason, event): fail a run with its reason.
--
-- Used by the current attempt when a run cannot go on: a checkpoint whose
-- seal does not verify (event agent.run.seal_failed), an owner no longer
-- allowed, a gate that refuses the resumed run.  The lease is released,
-- the transcript and the run's entry (an A2A task, a cron fire) told and
-- the failure audited under p_event.  Fenced (ticketiq._fence).
-- Limits:
--   p_run_id  the run
--   p_epoch   the writer's epoch
--   p_reason  1..2000
--   p_event   agent.run.<lower-case name>, at most 200 characters
-- SQLSTATEs: TQ004 (bad reason or event), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence).
create or replace function ticketiq.fail_run(
    p_run_id uuid,
    p_epoch bigint,
    p_reason text,
    p_event text default 'agent.run.failed'
)
returns table (
    run_id uuid,
    status text,
    finished_at timestamptz
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
    perform ticketiq._require_text('reason', p_reason, 2000);
    if p_event is null or length(p_event) > 200 or p_event !~ '^agent\.run\.[a-z_]+$' then
        raise exception 'event must be an agent.run.* name, got %', coalesce(left(p_event, 200), 'null')
            using errcode = 'TQ004';
    end if;
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;

    update ticketiq.runs as r
    set status = 'failed',
        failure_reason = p_reason,
        lease_holder = null,
        lease_expires_at = null,
        finished_at = v_now,
        updated_at = v_now
    where r.run_id = p_run_id;

    insert into ticketiq.transcript_entries (run_id, kind, body, at)
    values (p_run_id, 'failed', jsonb_build_object('reason', p_reason), v_now);
    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, p_event, p_run_id, p_epoch, v_run.lease_holder,
        jsonb_build_object('reason', p_reason, 'step', v_run.last_step, 'loss_count', v_run.loss_count));
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run_id, 'failed', v_run.last_step, p_epoch,
        jsonb_build_object('reason', p_reason, 'event', p_event), v_now);
    perform ticketiq._finish_entry(p_run_id, 'failed', jsonb_build_object('reason', p_reason), v_now);
    perform pg_notify('ticketiq_run_finished', p_run_id::text);

    return query select p_run_id, 'failed'::text, v_now;
end;
$$;

comment on function ticketiq.fail_run(uuid, bigint, text, text) is
'Fail the run with its reason (transcript told, audited under p_event, lease released). Fenced.';
