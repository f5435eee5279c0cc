-- ticketiq.record_outcome(...): record how one call of the last step ended.
--
-- p_settlement says how the outcome was obtained:
--   made             the call was made by this attempt (a changing call must
--                    have been marked in doubt first: TQ007 otherwise, I5)
--   redone           made again on resume (a read has no row: its outcome is
--                    carried in the next checkpoint and the resume's audit row)
--   coalesced        an approval request coalesced with the waiting one
--   read_decision    a person's decision read instead of filing again
--   resent_same_key  a keyed write sent again with the same step key
--   asked_again      a delegation asked again by its delegation key
--   read_back        the outcome read back from the vendor
--   unknown          not sent again; the outcome is unknown
--   skipped          not made (a gate refused it)
-- 'made' leaves the call done; every other value leaves it settled.
-- p_seal is the runner's seal of the finished row (ticketiq_pg.seal.call_fields:
-- the call as its checkpoint lists it, the state, settlement and outcome)
-- under key p_seal_key_id, stored with the outcome: a resume uses no
-- outcome it cannot verify.
-- Fenced (ticketiq._fence).  Recording the same outcome again changes
-- nothing; a different one for a finished call raises TQ007.
-- Limits:
--   p_run_id      the run
--   p_epoch       the writer's epoch
--   p_step        any step (TQ008 unless it has the call)
--   p_call_id     1..256
--   p_outcome     any JSON value, or null
--   p_settlement  one of the settlements above
--   p_seal         null, or 1..1024
--   p_seal_key_id  null, or 1..512
-- SQLSTATEs: TQ004 (bad call id or settlement), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence), TQ007 finished otherwise or made unmarked, TQ008 no
--   such call (also a read, which has no row).
create or replace function ticketiq.record_outcome(
    p_run_id uuid,
    p_epoch bigint,
    p_step integer,
    p_call_id text,
    p_outcome jsonb,
    p_settlement text default 'made',
    p_seal text default null,
    p_seal_key_id text default null
)
returns table (
    run_id uuid,
    step integer,
    call_id text,
    state text,
    settlement text,
    finished_at timestamptz,
    replayed boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_call ticketiq.calls;
    v_state text;
begin
    perform ticketiq._require_text('call_id', p_call_id, 256);
    perform ticketiq._require_text('seal', p_seal, 1024, true);
    perform ticketiq._require_text('seal_key_id', p_seal_key_id, 512, true);
    if p_settlement is null or p_settlement not in (
        'made', 'redone', 'coalesced', 'read_decision', 'resent_same_key',
        'asked_again', 'read_back', 'unknown', 'skipped'
    ) then
        raise exception 'unknown settlement %', coalesce(left(p_settlement, 64), 'null')
            using errcode = 'TQ004';
    end if;
    perform ticketiq._fence('run', p_run_id, p_epoch, v_now);

    select c.* into v_call
    from ticketiq.calls as c
    where c.run_id = p_run_id and c.step = p_step and c.call_id = p_call_id
    for update;
    if not found then
        raise exception 'step % of run % has no call %', p_step, p_run_id, p_call_id
            using errcode = 'TQ008';
    end if;

    if v_call.state in ('done', 'settled') then
        if v_call.settlement = p_settlement and v_call.outcome is not distinct from p_outcome then
            return query select v_call.run_id, v_call.step, v_call.call_id, v_call.state,
                v_call.settlement, v_call.finished_at, true;
            return;
        end if;
        raise exception 'call % of run % step % is already % (%)', p_call_id, p_run_id, p_step,
            v_call.state, v_call.settlement
            using errcode = 'TQ007';
    end if;
    if p_settlement = 'made' and v_call.classification <> 'read' and v_call.state <> 'in_doubt' then
        raise exception 'changing call % was not marked in doubt before it was made', p_call_id
            using errcode = 'TQ007',
                  hint = 'Call ticketiq.mark_in_doubt first.';
    end if;

    v_state := case when p_settlement = 'made' then 'done' else 'settled' end;
    update ticketiq.calls as c
    set state = v_state,
        settlement = p_settlement,
        outcome = p_outcome,
        finished_at = v_now,
        finished_epoch = p_epoch,
        seal = p_seal,
        seal_key_id = p_seal_key_id
    where c.run_id = p_run_id and c.step = p_step and c.call_id = p_call_id;
    -- The run's event stream (migration 0019): the outcome itself when it is
    -- small (a large one is read from the run: GET /runs/{id}).
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run_id, 'call_settled', p_step, p_epoch,
        jsonb_build_object('call_id', p_call_id, 'tool', v_call.tool, 'settlement', p_settlement)
        || ticketiq._event_outcome(p_outcome),
        v_now);

    return query select p_run_id, p_step, p_call_id, v_state, p_settlement, v_now, false;
end;
$$;

comment on function ticketiq.record_outcome(uuid, bigint, integer, text, jsonb, text, text, text) is
'Record a call''s outcome and how it was settled, with the runner''s seal of it (fenced; idempotent for the same outcome). TQ001-TQ008.';
