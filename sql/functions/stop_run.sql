-- ticketiq.stop_run(run, epoch, reason): end a run because a Stop was asked.
--
-- Called by the current attempt when its gate sees a Stop (see
-- ticketiq.request_stop): the run is 'stopped', the lease released, the
-- transcript told and agent.run.stopped audited.  Fenced (ticketiq._fence).
-- Limits:
--   p_run_id  the run
--   p_epoch   the writer's epoch
--   p_reason  null or empty ('stop requested'), or at most 2000 characters
-- SQLSTATEs: TQ004 (bad reason), TQ001, TQ002, TQ003, TQ006 (ticketiq._fence).
create or replace function ticketiq.stop_run(
    p_run_id uuid,
    p_epoch bigint,
    p_reason text default 'stop requested'
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
    v_reason text := coalesce(nullif(p_reason, ''), 'stop requested');
begin
    perform ticketiq._require_text('reason', p_reason, 2000, true, 0);
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;

    update ticketiq.runs as r
    set status = 'stopped',
        failure_reason = v_reason,
        lease_holder = null,
        lease_expires_at = null,
        finished_at = v_now,
        updated_at = v_now
    where r.run_id = p_run_id;

    insert into ticketiq.transcript_entries (run_id, kind, body, at)
    values (p_run_id, 'stopped', jsonb_build_object('reason', v_reason), v_now);
    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.stopped', p_run_id, p_epoch, v_run.lease_holder,
        jsonb_build_object('reason', v_reason, 'step', v_run.last_step,
            'requested_by', v_run.stop_requested_by));
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run_id, 'stopped', v_run.last_step, p_epoch,
        jsonb_build_object('reason', v_reason, 'requested_by', v_run.stop_requested_by), v_now);
    perform ticketiq._finish_entry(p_run_id, 'stopped', jsonb_build_object('reason', v_reason), v_now);
    perform pg_notify('ticketiq_run_finished', p_run_id::text);

    return query select p_run_id, 'stopped'::text, v_now;
end;
$$;

comment on function ticketiq.stop_run(uuid, bigint, text) is
'End the run as stopped (transcript told, audited, lease released). Fenced.';
