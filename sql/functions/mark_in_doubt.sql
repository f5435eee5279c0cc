-- ticketiq.mark_in_doubt(...): mark a changing call in doubt just before it is made.
--
-- One statement per changing call (a read is never marked: TQ004).  Fenced
-- like every attempt's write (TQ001/TQ002/TQ003/TQ006) and refused once the
-- run's answer is sealed (TQ005).  The call must belong to the run's last
-- written step (TQ007 step_conflict otherwise; TQ008 unknown_call when the
-- step has no such call).  The classification recorded here decides how a
-- resume settles the call (invariant I7): p_classification, when given, is
-- the tool's classification now; a call once marked as a write stays a write.
-- Marking a call again changes nothing and returns the first mark.
-- stop_requested tells the caller a Stop was asked: it must not make the call.
-- p_seal is the runner's seal of the row in doubt (ticketiq_pg.seal.call_fields:
-- the call as its checkpoint lists it, state in_doubt, the classification
-- recorded here) under key p_seal_key_id, stored with the mark: a resume acts
-- on no mark it cannot verify.  A mark again keeps the first mark's seal.
-- Limits:
--   p_run_id          the run
--   p_epoch           the writer's epoch
--   p_step            the run's last step
--   p_call_id         1..256
--   p_classification  null, or one of read, write, delegation, remote_agent,
--                     subagent_with_tools
--   p_seal            null, or 1..1024
--   p_seal_key_id     null, or 1..512
-- SQLSTATEs: TQ004 (bad call id or classification, a read), TQ001, TQ002,
--   TQ003, TQ006 (ticketiq._fence), TQ005 answer sealed, TQ007 not the last
--   step or the call finished, TQ008 no such call.
create or replace function ticketiq.mark_in_doubt(
    p_run_id uuid,
    p_epoch bigint,
    p_step integer,
    p_call_id text,
    p_classification text default null,
    p_seal text default null,
    p_seal_key_id text default null
)
returns table (
    run_id uuid,
    step integer,
    call_id text,
    state text,
    marked_classification text,
    step_key text,
    marked_at timestamptz,
    already_marked boolean,
    stop_requested boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
    v_call ticketiq.calls;
    v_class text;
begin
    perform ticketiq._require_text('call_id', p_call_id, 256);
    perform ticketiq._require_text('seal', p_seal, 1024, true);
    perform ticketiq._require_text('seal_key_id', p_seal_key_id, 512, true);
    if p_classification is not null and p_classification not in (
        'read', 'write', 'delegation', 'remote_agent', 'subagent_with_tools'
    ) then
        raise exception 'unknown classification %', left(p_classification, 64) using errcode = 'TQ004';
    end if;
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;

    if exists (select 1 from ticketiq.answers as a where a.run_id = p_run_id) then
        raise exception 'run % has a sealed answer and makes no further call', p_run_id
            using errcode = 'TQ005';
    end if;
    if p_step is distinct from v_run.last_step then
        raise exception 'run % is at step %, cannot mark a call of step %', p_run_id,
            v_run.last_step, coalesce(p_step::text, 'null')
            using errcode = 'TQ007';
    end if;

    select c.* into v_call
    from ticketiq.calls as c
    where c.run_id = p_run_id and c.step = p_step and c.call_id = p_call_id
    for update;
    if not found then
        -- A call the checkpoint recorded as a read has no row; the tool may
        -- be a write by now (p_classification): then it is recorded here.
        select p_run_id, p_step, e.value ->> 'call_id', e.ordinality::integer,
            e.value ->> 'tool', e.value -> 'arguments', e.value ->> 'classification',
            e.value ->> 'step_key'
        into v_call.run_id, v_call.step, v_call.call_id, v_call.ordinal, v_call.tool,
            v_call.arguments, v_call.classification, v_call.step_key
        from ticketiq.checkpoints as k
        cross join lateral jsonb_array_elements(k.body -> 'calls') with ordinality as e
        where k.run_id = p_run_id and k.step = p_step and e.value ->> 'call_id' = p_call_id;
        if not found then
            raise exception 'step % of run % has no call %', p_step, p_run_id, p_call_id
                using errcode = 'TQ008';
        end if;
        if coalesce(p_classification, 'read') = 'read' then
            raise exception 'call % is a read; reads are never marked in doubt', p_call_id
                using errcode = 'TQ004';
        end if;
        insert into ticketiq.calls (
            run_id, step, call_id, ordinal, tool, arguments, classification, step_key
        ) values (
            v_call.run_id, v_call.step, v_call.call_id, v_call.ordinal, v_call.tool,
            v_call.arguments, v_call.classification, v_call.step_key
        );
        v_call.state := 'pending';
    end if;

    if v_call.marked_classification is not null then
        return query select v_call.run_id, v_call.step, v_call.call_id, v_call.state,
            v_call.marked_classification, v_call.step_key, v_call.marked_at, true,
            v_run.stop_requested_at is not null;
        return;
    end if;
    if v_call.state <> 'pending' then
        raise exception 'call % of run % step % is already %', p_call_id, p_run_id, p_step, v_call.state
            using errcode = 'TQ007';
    end if;

    v_class := case
        when p_classification is not null and p_classification <> 'read' then p_classification
        else v_call.classification
    end;
    if v_class = 'read' then
        raise exception 'call % is a read; reads are never marked in doubt', p_call_id
            using errcode = 'TQ004';
    end if;

    update ticketiq.calls as c
    set state = 'in_doubt',
        marked_classification = v_class,
        marked_at = v_now,
        marked_epoch = p_epoch,
        seal = p_seal,
        seal_key_id = p_seal_key_id
    where c.run_id = p_run_id and c.step = p_step and c.call_id = p_call_id;
    -- The run's event stream (migration 0019), under the run's row lock.
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run_id, 'call_started', p_step, p_epoch,
        jsonb_build_object('call_id', p_call_id, 'tool', v_call.tool, 'classification', v_class), v_now);

    return query select p_run_id, p_step, p_call_id, 'in_doubt'::text, v_class, v_call.step_key,
        v_now, false, v_run.stop_requested_at is not null;
end;
$$;

comment on function ticketiq.mark_in_doubt(uuid, bigint, integer, text, text, text, text) is
'Mark a changing call of the last step in doubt before it is made, with the runner''s seal of the mark (fenced, idempotent; a write stays a write). TQ001-TQ008.';
