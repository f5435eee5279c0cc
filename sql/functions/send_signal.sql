-- ticketiq.send_signal(run, name, payload, sender key, actor): deliver a signal once.
--
-- An outside event for a workflow run (through the front: POST
-- /runs/{id}/signals/{name}).  Stored once per (run, name, sender key): a
-- sender key is one request, so the same key again with the same payload
-- from the same actor gets the first delivery back (created false, woken 0;
-- nothing is stored or woken twice), also once the run has ended, and with
-- another payload or from another actor it is TQ013 (never the new payload
-- dropped unseen).  A run suspended on signal:<run id>:<name> is woken
-- (ticketiq._wake, this run only); a run not waiting yet finds the signal
-- when its step waits (ticketiq.wait_run).  A run holds at most 64 signals
-- not yet consumed, and at most 1 MiB (1,048,576 bytes of their JSON text)
-- of their payloads: past either, TQ012, until its steps consume some.  The
-- run's row is locked first, so a wait committing at this moment either sees
-- the signal or is woken by it, and two sends count the pending signals one
-- after the other.  A workflow declares the signals it waits for
-- (ticketiq.declare_workflows): a name its version does not wait for is
-- TQ014, nothing stored (the version the run's first checkpoint names;
-- before that, any version declared for the run's entry kind; a run of no
-- declared version, or one that declared no names, takes any name).  Not
-- fenced: it is not an attempt's write.
-- Limits:
--   p_run_id      the run
--   p_name        1..200
--   p_payload     any JSON value (not SQL null)
--   p_sender_key  1..512 bytes of UTF-8 (with the name it fits the index)
--   p_actor       null, or 1..512
--   per run       64 signals pending, 1,048,576 bytes of pending payloads
-- SQLSTATEs: TQ004 (bad name, payload, key or actor), TQ001 (unknown run),
--   TQ006 (the run is completed, failed or stopped: nothing stored),
--   TQ012 (the run's pending signals are at their limit), TQ013 (the sender
--   key was used with another payload or by another actor), TQ014 (the
--   run's workflow does not wait for a signal of that name).
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
    c_max_pending constant integer := 64;
    c_max_pending_bytes constant bigint := 1048576;
    v_now timestamptz := ticketiq.now();
    v_status text;
    v_entry_point text;
    v_flow text;
    v_version text;
    v_declared boolean;
    v_accepts boolean;
    v_names text;
    v_sent ticketiq.workflow_signals;
    v_pending integer;
    v_pending_bytes bigint;
    v_id bigint;
begin
    perform ticketiq._require_text('name', p_name, 200);
    perform ticketiq._require_bytes('sender_key', p_sender_key, 512);
    perform ticketiq._require_text('actor', p_actor, 512, true);
    if p_payload is null then
        raise exception 'payload must be a JSON value' using errcode = 'TQ004';
    end if;
    select r.status, r.entry_point into v_status, v_entry_point
    from ticketiq.runs as r where r.run_id = p_run_id for update;
    if not found then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;

    -- A sender key is one request: answered as it was, whatever the run's state now.
    select s.* into v_sent from ticketiq.workflow_signals as s
    where s.run_id = p_run_id and s.name = p_name and s.sender_key = p_sender_key;
    if found then
        if v_sent.payload <> p_payload or v_sent.sent_by is distinct from p_actor then
            raise exception 'sender key % of signal % was used with another payload or by another actor',
                left(p_sender_key, 80), p_name
                using errcode = 'TQ013';
        end if;
        return query select v_sent.signal_id, false, 0;
        return;
    end if;
    if v_status in ('completed', 'failed', 'stopped') then
        raise exception 'run % is %: the signal was not delivered', p_run_id, v_status
            using errcode = 'TQ006';
    end if;
    -- The names its workflow waits for: never a signal stored that no step will consume.
    select f.body #>> '{counters,workflow,name}', f.body #>> '{counters,workflow,version}'
    into v_flow, v_version
    from ticketiq.checkpoints as f
    where f.run_id = p_run_id and f.step = 1 and f.body -> 'counters' ? 'workflow';
    select count(*) > 0, coalesce(bool_or(w.signals is null or p_name = any(w.signals)), false),
        string_agg(distinct array_to_string(w.signals, ', '), '; ')
    into v_declared, v_accepts, v_names
    from ticketiq.workflow_versions as w
    where (v_flow is not null and w.name = v_flow and w.version = v_version)
        or (v_flow is null and w.kind = v_entry_point);
    if v_declared and not v_accepts then
        raise exception 'run % (workflow %) waits for no signal %', p_run_id,
            coalesce(v_flow || ' version ' || v_version, 'of kind ' || v_entry_point), p_name
            using errcode = 'TQ014',
                hint = format('it waits for: %s', coalesce(nullif(v_names, ''), 'no signal'));
    end if;
    select count(*)::integer, coalesce(sum(octet_length(s.payload::text)), 0)
    into v_pending, v_pending_bytes
    from ticketiq.workflow_signals as s
    where s.run_id = p_run_id and s.consumed_at is null;
    if v_pending >= c_max_pending
        or v_pending_bytes + octet_length(p_payload::text) > c_max_pending_bytes then
        raise exception 'run % holds % signals (% bytes) not yet consumed: at most % and % bytes',
            p_run_id, v_pending, v_pending_bytes, c_max_pending, c_max_pending_bytes
            using errcode = 'TQ012';
    end if;

    insert into ticketiq.workflow_signals as s (run_id, name, sender_key, payload, sent_at, sent_by)
    values (p_run_id, p_name, p_sender_key, p_payload, v_now, p_actor)
    returning s.signal_id into v_id;
    insert into ticketiq.audit (at, event, run_id, actor, detail)
    values (v_now, 'workflow.signal_sent', p_run_id, p_actor,
        jsonb_build_object('name', p_name, 'signal_id', v_id, 'sender_key', p_sender_key));
    return query select v_id, true, ticketiq._wake('signal:' || p_run_id::text || ':' || p_name, v_now, p_run_id);
end;
$$;

comment on function ticketiq.send_signal(uuid, text, jsonb, text, text) is
'Deliver a signal to a run once per (run, name, sender key), answering a repeat as the first, and wake the run if it waits for it; TQ006 finished run, TQ012 pending limit, TQ013 key reused, TQ014 a name its workflow does not wait for.';
