-- ticketiq.fail_unrunnable_runs(actor, older than, limit): the operator's limit has passed.
--
-- A claimed workflow run no live process can run (ticketiq.unrunnable_runs)
-- waits for one: a rolling deploy's old worker that comes back, or a new
-- code that declares its version.  Past the operator's limit
-- (TICKETIQ_WORKFLOW_WAIT_LIMIT: waiting p_older_than_seconds since it was
-- woken or released) it is failed here, with the reason naming its
-- workflow version, audited agent.run.workflow_version_unavailable, its
-- transcript, event stream and entry told.  A suspended run is not failed:
-- it is not due yet, and the version may be deployed again before it is.
-- Each run is locked (SKIP LOCKED) and checked again under the lock, so a
-- run a process adopts meanwhile is never failed.  Returns the runs failed.
-- Limits:
--   p_actor               1..512
--   p_older_than_seconds  seconds in (0, 1e9]
--   p_limit               from 1 to 1000
-- SQLSTATEs: TQ004 (bad actor, age or limit).
create or replace function ticketiq.fail_unrunnable_runs(
    p_actor text,
    p_older_than_seconds double precision,
    p_limit integer default 100
)
returns table (
    run_id uuid,
    workflow text,
    workflow_version text,
    reason text
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_age interval := ticketiq._require_positive('older_than_seconds', p_older_than_seconds);
    v_row record;
    v_reason text;
begin
    perform ticketiq._require_text('actor', p_actor, 512);
    if p_limit is null or p_limit not between 1 and 1000 then
        raise exception 'limit must be 1 to 1000' using errcode = 'TQ004';
    end if;
    for v_row in
        select u.run_id, u.workflow, u.workflow_version
        from ticketiq.unrunnable_runs(1000, 'claimed') as u
        where u.waiting_since <= v_now - v_age
        limit p_limit
    loop
        -- Locked and checked again: adopted (running) or woken anew meanwhile, it stays.
        perform 1 from ticketiq.runs as r
        where r.run_id = v_row.run_id and r.status = 'claimed' and r.updated_at <= v_now - v_age
        for update skip locked;
        continue when not found;
        v_reason := format('no live worker can run workflow %s version %s: waited more than %s s '
            '(TICKETIQ_WORKFLOW_WAIT_LIMIT)', v_row.workflow, v_row.workflow_version, p_older_than_seconds);
        update ticketiq.runs as r
        set status = 'failed',
            epoch = r.epoch + 1,
            failure_reason = v_reason,
            finished_at = v_now,
            updated_at = v_now
        where r.run_id = v_row.run_id;
        insert into ticketiq.audit (at, event, run_id, actor, detail)
        values (v_now, 'agent.run.workflow_version_unavailable', v_row.run_id, p_actor,
            jsonb_build_object('reason', v_reason, 'workflow', v_row.workflow,
                'version', v_row.workflow_version));
        insert into ticketiq.transcript_entries (run_id, kind, body, at)
        values (v_row.run_id, 'failed', jsonb_build_object('reason', v_reason), v_now);
        insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
        select r.run_id, 'failed', r.last_step, r.epoch,
            jsonb_build_object('reason', v_reason, 'event', 'agent.run.workflow_version_unavailable'), v_now
        from ticketiq.runs as r where r.run_id = v_row.run_id;
        perform ticketiq._finish_entry(v_row.run_id, 'failed', jsonb_build_object('reason', v_reason), v_now);
        perform pg_notify('ticketiq_run_finished', v_row.run_id::text);
        return query select v_row.run_id, v_row.workflow, v_row.workflow_version, v_reason;
    end loop;
end;
$$;

comment on function ticketiq.fail_unrunnable_runs(text, double precision, integer) is
'Fail the claimed workflow runs no live process can run that waited longer than the operator''s limit (agent.run.workflow_version_unavailable). TQ004.';
