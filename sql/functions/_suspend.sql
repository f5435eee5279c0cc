-- ticketiq._suspend(run, wait key, event, detail, now): a fenced run gives its lease up.
--
-- The one suspension of ticketiq.suspend_run (an agent run's approval, reply
-- or child) and ticketiq.wait_run (a workflow's timer or signal): the run,
-- already fenced by the caller (ticketiq._fence, p_run is the row it
-- locked), becomes 'suspended' on p_wait_key at epoch + 1 with no lease, and
-- p_event is audited at the new epoch with p_detail, the key and the step
-- (the key and the step the system's, whatever p_detail says).
-- Returns the new epoch.
create or replace function ticketiq._suspend(
    p_run ticketiq.runs,
    p_wait_key text,
    p_event text,
    p_detail jsonb,
    p_now timestamptz
)
returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    update ticketiq.runs as r
    set status = 'suspended',
        epoch = r.epoch + 1,
        wait_key = p_wait_key,
        lease_holder = null,
        lease_expires_at = null,
        updated_at = p_now
    where r.run_id = p_run.run_id;
    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (p_now, p_event, p_run.run_id, p_run.epoch + 1, p_run.lease_holder,
        -- the system's fields last: a caller's detail cannot write them
        p_detail || jsonb_build_object('wait_key', p_wait_key, 'step', p_run.last_step));
    -- The run's event stream (migration 0019), the caller holding the row.
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run.run_id, 'suspended', p_run.last_step, p_run.epoch + 1,
        p_detail || jsonb_build_object('wait_key', p_wait_key, 'event', p_event), p_now);
    return p_run.epoch + 1;
end;
$$;

comment on function ticketiq._suspend(ticketiq.runs, text, text, jsonb, timestamptz) is
'Internal: suspend a run the caller fenced on p_wait_key (epoch + 1, no lease) and audit p_event.';
