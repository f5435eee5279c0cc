-- ticketiq.request_stop(run, actor, reason): a person asks a run to Stop.
--
-- Not fenced: anyone allowed to call it records the request, whether the
-- run's process is alive, dead or stalled.  The run's attempt (or the one
-- that resumes it) sees stop_requested at its next gate and ends the run
-- with ticketiq.stop_run before making any further call; a suspended run
-- is woken for it.  Asking twice keeps the first request.  Not fenced: any
-- caller may ask.
-- Limits:
--   p_run_id  the run
--   p_actor   1..512
--   p_reason  null, or at most 2000 characters
-- SQLSTATEs: TQ004 (bad actor or reason), TQ001 unknown run, TQ006 the run
--   finished already.
create or replace function ticketiq.request_stop(
    p_run_id uuid,
    p_actor text,
    p_reason text default null
)
returns table (
    run_id uuid,
    status text,
    stop_requested_at timestamptz
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
    perform ticketiq._require_text('actor', p_actor, 512);
    perform ticketiq._require_text('reason', p_reason, 2000, true, 0);
    select r.* into v_run from ticketiq.runs as r where r.run_id = p_run_id for update;
    if not found then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
    if v_run.finished_at is not null then
        raise exception 'run % already %', p_run_id, v_run.status using errcode = 'TQ006';
    end if;
    if v_run.stop_requested_at is null then
        update ticketiq.runs as r
        set stop_requested_at = v_now,
            stop_requested_by = p_actor
        where r.run_id = p_run_id;
        insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
        values (v_now, 'agent.run.stop_requested', p_run_id, v_run.epoch, p_actor,
            jsonb_build_object('reason', p_reason));
        perform pg_notify('ticketiq_stop', p_run_id::text);
        if v_run.status = 'suspended' then
            -- A suspended run holds no lease: wake it so its resume sees the Stop.
            update ticketiq.runs as r
            set status = 'claimed',
                epoch = r.epoch + 1,
                wait_key = null,
                claim_reason = 'woken',
                updated_at = v_now
            where r.run_id = p_run_id;
            insert into ticketiq.audit (at, event, run_id, detail)
            values (v_now, 'agent.run.woken', p_run_id, jsonb_build_object('by', 'stop'));
            perform pg_notify('ticketiq_resume', p_run_id::text);
            return query select p_run_id, 'claimed'::text, v_now;
            return;
        end if;
        return query select p_run_id, v_run.status::text, v_now;
        return;
    end if;
    return query select p_run_id, v_run.status::text, v_run.stop_requested_at;
end;
$$;

comment on function ticketiq.request_stop(uuid, text, text) is
'Record a person''s Stop for a run (not fenced); its attempt stops it at the next gate. TQ001, TQ006, TQ004.';
