-- ticketiq.record_resume(run, epoch, settlements): audit one crash resume.
--
-- Called once by the attempt that adopted a lost run, after it settled the
-- calls its last step left.  In one statement it records each settlement
-- on its call (state 'settled', or 'done' for a call made normally by this
-- attempt), writes the single audit row of this resume — agent.run.
-- crash_resumed after a loss (I14), agent.run.resumed after a graceful
-- release or a wake-up — with the step, how many times the run was lost,
-- why it was up for adoption and the settlements, and tells the transcript.  p_settlements is a JSON array of
-- {call_id, settlement, outcome?}; each call must belong to the last step.
-- A call an earlier attempt already finished keeps its record unchanged;
-- a read has no row (its settlement is in the audit row only).
-- Fenced (ticketiq._fence).  The same record again (the same epoch and
-- settlements: a statement sent again after its commit went unseen)
-- returns the row the first one wrote and changes nothing.
-- Limits:
--   p_run_id       the run
--   p_epoch        the adopting epoch
--   p_settlements  a JSON array of {call_id, settlement, outcome?} objects
-- SQLSTATEs: TQ004 (malformed settlements), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence), TQ007 audited already with other settlements, TQ008
--   no such call.
create or replace function ticketiq.record_resume(
    p_run_id uuid,
    p_epoch bigint,
    p_settlements jsonb default '[]'
)
returns table (
    run_id uuid,
    step integer,
    loss_count integer,
    audit_id bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
    v_item jsonb;
    v_audit_id bigint;
    v_event text;
    v_prior jsonb;
    v_prior_id bigint;
begin
    v_run := ticketiq._fence(p_run_id, p_epoch, v_now);

    if p_settlements is null or jsonb_typeof(p_settlements) <> 'array' then
        raise exception 'settlements must be a JSON array' using errcode = 'TQ004';
    end if;
    v_event := case coalesce(v_run.claim_reason, 'lease_lapsed')
        when 'lease_lapsed' then 'agent.run.crash_resumed'
        when 'session_ended' then 'agent.run.crash_resumed'
        else 'agent.run.resumed'
    end;
    select a.audit_id, a.detail into v_prior_id, v_prior
    from ticketiq.audit as a
    where a.run_id = p_run_id and a.epoch = p_epoch
        and a.event in ('agent.run.crash_resumed', 'agent.run.resumed')
    order by a.audit_id
    limit 1;
    if found then
        -- The same record again (a statement sent again after its commit went
        -- unseen): what the first one recorded, nothing written.
        if v_prior -> 'settlements' = p_settlements then
            return query select p_run_id, (v_prior ->> 'step')::integer,
                (v_prior ->> 'loss_count')::integer, v_prior_id;
            return;
        end if;
        raise exception 'the resume of run % at epoch % was already audited', p_run_id, p_epoch
            using errcode = 'TQ007';
    end if;

    for v_item in select e.value from jsonb_array_elements(p_settlements) as e loop
        if jsonb_typeof(v_item) <> 'object'
            or jsonb_typeof(v_item -> 'call_id') is distinct from 'string'
            or (v_item ->> 'settlement') is null
            or (v_item ->> 'settlement') not in (
                'made', 'redone', 'coalesced', 'read_decision', 'resent_same_key',
                'asked_again', 'read_back', 'unknown', 'skipped'
            ) then
            raise exception 'each settlement must be {call_id, settlement, outcome?} with a known settlement, got %', v_item
                using errcode = 'TQ004';
        end if;
        if not exists (
            select 1
            from ticketiq.checkpoints as k
            cross join lateral jsonb_array_elements(k.body -> 'calls') as e
            where k.run_id = p_run_id
                and k.step = v_run.last_step
                and e.value ->> 'call_id' = v_item ->> 'call_id'
        ) then
            raise exception 'step % of run % has no call %', v_run.last_step, p_run_id, v_item ->> 'call_id'
                using errcode = 'TQ008';
        end if;
        -- A call already finished (by an earlier attempt) keeps its record.
        update ticketiq.calls as c
        set state = case when v_item ->> 'settlement' = 'made' then 'done' else 'settled' end,
            settlement = v_item ->> 'settlement',
            outcome = v_item -> 'outcome',
            finished_at = v_now,
            finished_epoch = p_epoch
        where c.run_id = p_run_id
            and c.step = v_run.last_step
            and c.call_id = v_item ->> 'call_id'
            and c.state in ('pending', 'in_doubt');
    end loop;

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, v_event, p_run_id, p_epoch, v_run.lease_holder,
        jsonb_build_object(
            'step', v_run.last_step,
            'loss_count', v_run.loss_count,
            'reason', coalesce(v_run.claim_reason, 'lease_lapsed'),
            'settlements', p_settlements
        ))
    returning ticketiq.audit.audit_id into v_audit_id;
    insert into ticketiq.transcript_entries (run_id, kind, body, at)
    values (p_run_id, 'resumed', jsonb_build_object(
        'step', v_run.last_step, 'loss_count', v_run.loss_count, 'settlements', p_settlements
    ), v_now);

    return query select p_run_id, v_run.last_step::integer, v_run.loss_count::integer, v_audit_id;
end;
$$;

comment on function ticketiq.record_resume(uuid, bigint, jsonb) is
'Record how each call the last step left was settled and write the one agent.run.crash_resumed audit row of this resume. Fenced; the same record again returns the first one''s row, other settlements TQ007.';
