-- ticketiq.seal_answer(...): seal a finished run's answer, write-once.
--
-- The answer is model step p_step (= last step + 1; TQ007 otherwise; a run
-- not written ahead has no checkpoints, so any later step).  In
-- one statement it closes the previous step's calls, stores the answer with
-- the caller's seal, kept until p_retain_seconds from now, and records the
-- step.  The run keeps its lease until ticketiq.hand_on_answer; a process
-- that dies in between is replaced by one that hands this answer on and
-- runs nothing (I10).  Sealing the same answer again (same epoch and seal)
-- returns the stored row; any other second answer raises TQ005
-- answer_sealed.  Fenced (ticketiq._fence).
-- Limits:
--   p_run_id          the run
--   p_epoch           the writer's epoch
--   p_step            the run's last step + 1 (or later, for a run not written ahead)
--   p_body            any JSON value, not SQL null
--   p_seal            1..1024
--   p_seal_key_id     1..512
--   p_retain_seconds  seconds in (0, 1e9]
-- SQLSTATEs: TQ004 (bad seal, key id, body or retention), TQ001, TQ002,
--   TQ003, TQ006 (ticketiq._fence), TQ005 another answer sealed, TQ007 not
--   the next step.
create or replace function ticketiq.seal_answer(
    p_run_id uuid,
    p_epoch bigint,
    p_step integer,
    p_body jsonb,
    p_seal text,
    p_seal_key_id text,
    p_retain_seconds double precision
)
returns table (
    run_id uuid,
    step integer,
    sealed_at timestamptz,
    retain_until timestamptz,
    replayed boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_retain interval := ticketiq._require_positive('retain', p_retain_seconds);
    v_run ticketiq.runs;
    v_prior ticketiq.answers;
begin
    perform ticketiq._require_text('seal', p_seal, 1024);
    perform ticketiq._require_text('seal_key_id', p_seal_key_id, 512);
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;

    select a.* into v_prior from ticketiq.answers as a where a.run_id = p_run_id;
    if found then
        if v_prior.epoch = p_epoch and v_prior.seal = p_seal then
            return query select p_run_id, v_prior.step, v_prior.sealed_at, v_prior.retain_until, true;
            return;
        end if;
        raise exception 'run % already has a sealed answer', p_run_id using errcode = 'TQ005';
    end if;
    if p_body is null then
        raise exception 'answer must not be null' using errcode = 'TQ004';
    end if;
    if p_step is null or p_step <= v_run.last_step
        or (v_run.durable and p_step <> v_run.last_step + 1) then
        raise exception 'run % expects its answer at step %, got step %', p_run_id,
            v_run.last_step + 1, coalesce(p_step::text, 'null')
            using errcode = 'TQ007';
    end if;

    if v_run.last_step >= 1 then
        update ticketiq.calls as c
        set state = case when c.state = 'pending' and c.classification <> 'read'
                then 'settled' else 'done' end,
            settlement = case when c.state = 'pending' and c.classification <> 'read'
                then 'skipped' else 'made' end,
            finished_at = v_now,
            finished_epoch = p_epoch
        where c.run_id = p_run_id
            and c.step = v_run.last_step
            and c.state in ('pending', 'in_doubt');
    end if;

    insert into ticketiq.answers (
        run_id, step, epoch, body, seal, seal_key_id, sealed_at, retain_until
    ) values (
        p_run_id, p_step, p_epoch, p_body, p_seal, p_seal_key_id, v_now, v_now + v_retain
    );

    update ticketiq.runs as r
    set last_step = p_step,
        updated_at = v_now
    where r.run_id = p_run_id;

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.answer_sealed', p_run_id, p_epoch, v_run.lease_holder,
        jsonb_build_object('step', p_step, 'seal_key_id', p_seal_key_id));
    -- The run's event stream (migration 0019): the answer's text is the final
    -- step's whole text.
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run_id, 'answer', p_step, p_epoch,
        jsonb_build_object('text', case when jsonb_typeof(p_body -> 'text') = 'string'
            then p_body -> 'text' else to_jsonb(''::text) end)
        || case when p_body ? 'output' and pg_column_size(p_body -> 'output') <= 4096
            then jsonb_build_object('output', p_body -> 'output') else '{}'::jsonb end,
        v_now);

    return query select p_run_id, p_step, v_now, v_now + v_retain, false;
end;
$$;

comment on function ticketiq.seal_answer(uuid, bigint, integer, jsonb, text, text, double precision) is
'Seal a run''s final answer (step = last step + 1), write-once and kept until the retention time. Fenced; TQ005 if another answer is sealed.';
