-- ticketiq.send_signal(run, name, payload, sender key, actor): deliver a signal once.
--
-- An outside event for a workflow run (through the front: POST
-- /runs/{id}/signals/{name}).  Stored once per (run, name, sender key): a
-- sender that repeats its request gets the first delivery back (created
-- false) and nothing is stored or woken twice.  A run suspended on
-- signal:<run id>:<name> is woken (ticketiq._wake); a run not waiting yet
-- finds the signal when its step waits (ticketiq.wait_run).  The run's row
-- is locked first, so a wait committing at this moment either sees the
-- signal or is woken by it.  Not fenced: it is not an attempt's write.
-- Limits:
--   p_run_id      the run
--   p_name        1..200
--   p_payload     any JSON value (not SQL null)
--   p_sender_key  1..512
--   p_actor       null, or 1..512
-- SQLSTATEs: TQ004 (bad name, payload, key or actor), TQ001 (unknown run),
--   TQ006 (the run is completed, failed or stopped: nothing stored).
create or replace function ticketiq.send_signal(
    p_run_id uuid,
    p_name text,
    p_payload jsonb,
    p_sender_key text,
    p_actor text default null
)
returns table (
    signal_id bigint,
    created boolean,
    woken integer
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_status text;
    v_id bigint;
begin
    perform ticketiq._require_text('name', p_name, 200);
    perform ticketiq._require_text('sender_key', p_sender_key, 512);
    perform ticketiq._require_text('actor', p_actor, 512, true);
    if p_payload is null then
        raise exception 'payload must be a JSON value' using errcode = 'TQ004';
    end if;
    select r.status into v_status from ticketiq.runs as r where r.run_id = p_run_id for update;
    if not found then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
    if v_status in ('completed', 'failed', 'stopped') then
        raise exception 'run % is %: the signal was not delivered', p_run_id, v_status
            using errcode = 'TQ006';
    end if;

    insert into ticketiq.workflow_signals as s (run_id, name, sender_key, payload, sent_at, sent_by)
    values (p_run_id, p_name, p_sender_key, p_payload, v_now, p_actor)
    on conflict (run_id, name, sender_key) do nothing
    returning s.signal_id into v_id;
    if not found then
        return query select s.signal_id, false, 0 from ticketiq.workflow_signals as s
        where s.run_id = p_run_id and s.name = p_name and s.sender_key = p_sender_key;
        return;
    end if;
    insert into ticketiq.audit (at, event, run_id, actor, detail)
    values (v_now, 'workflow.signal_sent', p_run_id, p_actor,
        jsonb_build_object('name', p_name, 'signal_id', v_id, 'sender_key', p_sender_key));
    return query select v_id, true, ticketiq._wake('signal:' || p_run_id::text || ':' || p_name, v_now);
end;
$$;

comment on function ticketiq.send_signal(uuid, text, jsonb, text, text) is
'Deliver a signal to a run once per (run, name, sender key) and wake the run if it waits for it; TQ006 for a finished run.';
