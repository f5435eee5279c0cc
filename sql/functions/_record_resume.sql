-- ticketiq._record_resume(run, epoch, settlements, now): record_resume's work
-- for one resume, at the clock its caller read.
--
-- Called by ticketiq.record_resume (one resume) and ticketiq.record_resumes
-- (several in one statement, their rows locked first, then the clock read
-- once); what it does, its checks and its errors are record_resume's.
-- Limits:
--   p_run_id       the run
--   p_epoch        the adopting epoch
--   p_settlements  a JSON array of {call_id, settlement, outcome?} objects
--   p_now          the caller's clock (the fence takes the later of it and now)
-- SQLSTATEs: those of ticketiq.record_resume.
create or replace function ticketiq._record_resume(
    p_run_id uuid,
    p_epoch bigint,
    p_settlements jsonb,
    p_now timestamptz
)
returns table (
    run_id uuid,
    step integer,
    loss_count integer,
    audit_id bigint
)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := p_now;
    v_run ticketiq.runs;
    v_item jsonb;
    v_earlier jsonb;
    v_audit_id bigint;
    v_prior jsonb;
    v_settlements jsonb;
    v_complete boolean;
begin
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;

    if p_settlements is null or jsonb_typeof(p_settlements) <> 'array' then
        raise exception 'settlements must be a JSON array' using errcode = 'TQ004';
    end if;
    -- The predicate is audit_one_resume_per_epoch_idx's, word for word: one probe
    -- whatever the statistics (sql/tests/record_resume/13_lookup_is_one_probe.sql).
    select a.audit_id, a.detail into v_audit_id, v_prior
    from ticketiq.audit as a
    where a.run_id = p_run_id and a.epoch = p_epoch
        and a.event in ('agent.run.crash_resumed', 'agent.run.resumed')
    order by a.audit_id
    limit 1;
    v_settlements := coalesce(v_prior -> 'settlements', '[]'::jsonb);

    for v_item in select e.value from jsonb_array_elements(p_settlements) as e loop
        if jsonb_typeof(v_item) <> 'object'
            or jsonb_typeof(v_item -> 'call_id') is distinct from 'string'
            or (v_item ->> 'settlement') is null
            or (v_item ->> 'settlement') not in (
                'made', 'redone', 'coalesced', 'read_decision', 'resent_same_key',
                'asked_again', 'read_back', 'unknown', 'skipped', 'already_made'
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
        select e.value into v_earlier
        from jsonb_array_elements(v_settlements) as e
        where e.value ->> 'call_id' = v_item ->> 'call_id';
        if found then
            -- Recorded already: the same settlement again changes nothing.
            if v_earlier is distinct from v_item then
                raise exception 'the resume of run % at epoch % settled call % already, as %',
                    p_run_id, p_epoch, v_item ->> 'call_id', v_earlier ->> 'settlement'
                    using errcode = 'TQ007';
            end if;
            continue;
        end if;
        v_settlements := v_settlements || jsonb_build_array(v_item);
        -- The run's event stream (migration 0019), under the run's row lock.
        insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
        values (p_run_id, 'call_settled', v_run.last_step, p_epoch,
            jsonb_build_object('call_id', v_item ->> 'call_id', 'settlement', v_item ->> 'settlement',
                'resumed', true)
            || ticketiq._event_outcome(v_item -> 'outcome'),
            v_now);
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

    -- Complete once every call the last step left has its settlement.
    v_complete := not exists (
        select 1
        from ticketiq.checkpoints as k
        cross join lateral jsonb_array_elements(k.body -> 'calls') as e
        where k.run_id = p_run_id
            and k.step = v_run.last_step
            and not jsonb_path_exists(
                v_settlements, '$[*] ? (@.call_id == $id)', jsonb_build_object('id', e.value -> 'call_id')
            )
    );

    if v_audit_id is null then
        -- Opened at adoption (ticketiq._adopt); a resume adopted before it was is
        -- opened here.
        insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
        select v_now, o.o_event, p_run_id, p_epoch, v_run.lease_holder, o.o_detail
        from ticketiq._resume_opened(
            v_run.claim_reason, v_run.last_step, v_run.loss_count, v_settlements, v_complete
        ) as o
        returning ticketiq.audit.audit_id into v_audit_id;
    elsif v_settlements is distinct from v_prior -> 'settlements'
        or v_complete is distinct from (v_prior -> 'complete')::boolean then
        update ticketiq.audit as a
        set detail = a.detail || jsonb_build_object('settlements', v_settlements, 'complete', v_complete)
        where a.audit_id = v_audit_id;
    end if;
    if v_complete and (v_prior -> 'complete')::boolean is distinct from true then
        insert into ticketiq.transcript_entries (run_id, kind, body, at)
        values (p_run_id, 'resumed', jsonb_build_object(
            'step', v_run.last_step, 'loss_count', v_run.loss_count, 'settlements', v_settlements
        ), v_now);
    end if;

    return query select p_run_id, v_run.last_step::integer, v_run.loss_count::integer, v_audit_id;
end;
$$;

comment on function ticketiq._record_resume(uuid, bigint, jsonb, timestamptz) is
'Internal: record_resume''s work for one resume at the given clock (shared by record_resume and record_resumes).';
