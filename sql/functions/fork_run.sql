-- ticketiq.fork_run(source, step, run id, actor, reason, input, key, checkpoints, seal): a fork from a step.
--
-- Writes in one statement a new run whose history up to step p_step is the
-- source's: its checkpoints 1 to p_step as the caller verified them under
-- the seal keys (I9) and sealed anew for the new run id (a seal binds its
-- run, ticketiq_pg.seal), given in order in p_checkpoints.  The caller
-- also gave step p_step's calls the fork's own step keys (a fork is a new
-- identity: its correlation id is its run id, so every later key is its
-- own and none collides with the source's at a vendor) and the seals of
-- their pending rows (the body's call_seals, as ticketiq.write_checkpoint
-- takes them).  The fork is 'claimed' (claim_reason 'forked') and channel
-- ticketiq_resume is NOTIFYed: a resume worker adopts it through the one
-- resume path (ticketiq.adopt_run), verifies the chain and makes step
-- p_step's calls, under the fork's keys, through every gate as it stands
-- now.  The calls of the steps before are history, carried in the copied
-- conversation, never sent again.  The fork keeps the source's owner,
-- run-as, channel and entry point, and its input unless p_input gives
-- another (SQL null: the source's); meta.forked_from names the source run
-- and step.  Audited agent.run.forked on the fork and agent.run.fork_made
-- on the source, with who and why; the fork's transcript is told and its
-- event stream starts (a 'started' event at the step, naming the source).
-- p_source_seal is the seal of the source's step p_step the caller
-- verified: a source whose step is not that one any more is refused.  With
-- p_idempotency_key, a repeat finds the fork made under it (created =
-- false); the key for another source or step is refused (TQ013).
-- Limits:
--   p_source_run_id    the run forked
--   p_step             >= 1
--   p_run_id           the fork's run id: an id no run has
--   p_actor            1..512
--   p_reason           null, or at most 2000 characters
--   p_input            any JSON value, or SQL null (the source's input)
--   p_idempotency_key  null, or 1..600
--   p_checkpoints      a JSON array of p_step objects {step, body, seal, seal_key_id}, steps 1 to
--                      p_step in order, each body a checkpoint (ticketiq._validate_checkpoint), seal
--                      1..1024, seal_key_id 1..512
--   p_source_seal      1..1024
-- SQLSTATEs: TQ004 (bad input), TQ001 unknown source run, TQ007 the run id
--   exists, or the source's step p_step is not the one sealed p_source_seal,
--   TQ013 the key names a fork of another source or step.
create or replace function ticketiq.fork_run(
    p_source_run_id uuid,
    p_step integer,
    p_run_id uuid,
    p_actor text,
    p_reason text,
    p_input jsonb,
    p_idempotency_key text,
    p_checkpoints jsonb,
    p_source_seal text
)
returns table (
    run_id uuid,
    created boolean,
    status text,
    step integer,
    source_run_id uuid
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_source ticketiq.runs;
    v_existing ticketiq.runs;
    v_item jsonb;
    v_i integer := 0;
    v_last jsonb;
begin
    perform ticketiq._require_text('actor', p_actor, 512);
    perform ticketiq._require_text('reason', p_reason, 2000, true, 0);
    perform ticketiq._require_text('idempotency_key', p_idempotency_key, 600, true);
    perform ticketiq._require_text('source_seal', p_source_seal, 1024);
    if p_step is null or p_step < 1 then
        raise exception 'step must be >= 1, got %', p_step using errcode = 'TQ004';
    end if;
    if p_run_id is null then
        raise exception 'the fork''s run id is required' using errcode = 'TQ004';
    end if;
    if p_checkpoints is null or jsonb_typeof(p_checkpoints) <> 'array'
        or jsonb_array_length(p_checkpoints) <> p_step then
        raise exception 'checkpoints must be a JSON array of steps 1 to %', p_step using errcode = 'TQ004';
    end if;
    for v_item in select e.value from jsonb_array_elements(p_checkpoints) as e loop
        v_i := v_i + 1;
        if jsonb_typeof(v_item) <> 'object'
            or jsonb_typeof(v_item -> 'step') is distinct from 'number'
            or (v_item ->> 'step') <> v_i::text then
            raise exception 'checkpoint % must be an object of step %', v_i, v_i using errcode = 'TQ004';
        end if;
        perform ticketiq._validate_checkpoint(v_item -> 'body');
        if jsonb_typeof(v_item -> 'seal') is distinct from 'string'
            or jsonb_typeof(v_item -> 'seal_key_id') is distinct from 'string' then
            raise exception 'checkpoint % needs its seal and seal_key_id', v_i using errcode = 'TQ004';
        end if;
        perform ticketiq._require_text('seal', v_item ->> 'seal', 1024);
        perform ticketiq._require_text('seal_key_id', v_item ->> 'seal_key_id', 512);
        v_last := v_item;
    end loop;

    if p_idempotency_key is not null then
        select r.* into v_existing from ticketiq.runs as r where r.idempotency_key = p_idempotency_key;
        if found then
            if v_existing.meta -> 'forked_from' is distinct from jsonb_build_object(
                'run_id', p_source_run_id, 'step', p_step
            ) then
                raise exception 'the key % names another run', p_idempotency_key using errcode = 'TQ013';
            end if;
            return query select v_existing.run_id, false, v_existing.status::text, p_step, p_source_run_id;
            return;
        end if;
    end if;
    select r.* into v_source from ticketiq.runs as r where r.run_id = p_source_run_id;
    if not found then
        raise exception 'unknown run %', p_source_run_id using errcode = 'TQ001';
    end if;
    if not exists (
        select 1 from ticketiq.checkpoints as c
        where c.run_id = p_source_run_id and c.step = p_step and c.seal = p_source_seal
    ) then
        raise exception 'step % of run % is not the one verified', p_step, p_source_run_id
            using errcode = 'TQ007';
    end if;
    if exists (select 1 from ticketiq.runs as r where r.run_id = p_run_id) then
        raise exception 'run % already exists', p_run_id using errcode = 'TQ007';
    end if;

    insert into ticketiq.runs (
        run_id, owner, run_as, channel, entry_point, may_wait, correlation_id, idempotency_key,
        input, meta, status, epoch, last_step, claim_reason, created_at, updated_at, durable
    ) values (
        p_run_id, v_source.owner, v_source.run_as, v_source.channel, v_source.entry_point,
        v_source.may_wait, p_run_id::text, p_idempotency_key, coalesce(p_input, v_source.input),
        jsonb_build_object('forked_from', jsonb_build_object('run_id', p_source_run_id, 'step', p_step)),
        'claimed', 1, p_step, 'forked', v_now, v_now, true
    );
    insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id, written_at)
    select p_run_id, (e.value ->> 'step')::integer, 1, (e.value -> 'body') - 'call_seals',
        e.value ->> 'seal', e.value ->> 'seal_key_id', v_now
    from jsonb_array_elements(p_checkpoints) as e;
    -- the pending rows of the last step's changing calls, sealed for the fork
    perform ticketiq._step_calls(array[p_run_id], array[1::bigint], array[p_step],
        jsonb_build_array(v_last -> 'body'), v_now);

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.forked', p_run_id, 1, p_actor, jsonb_build_object(
        'source_run_id', p_source_run_id, 'step', p_step, 'reason', p_reason,
        'input_changed', p_input is not null and p_input is distinct from v_source.input));
    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.fork_made', p_source_run_id, v_source.epoch, p_actor, jsonb_build_object(
        'fork_run_id', p_run_id, 'step', p_step, 'reason', p_reason));
    insert into ticketiq.transcript_entries (run_id, kind, body, at)
    values (p_run_id, 'note', jsonb_build_object(
        'forked_from', p_source_run_id, 'step', p_step, 'by', p_actor, 'reason', p_reason), v_now);
    -- The fork's event stream begins as every run's does, at the step its history reaches.
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run_id, 'started', p_step, 1, jsonb_build_object(
        'entry_point', v_source.entry_point, 'channel', v_source.channel, 'parent_run_id', null,
        'forked_from', jsonb_build_object('run_id', p_source_run_id, 'step', p_step)
    ), v_now);
    perform pg_notify('ticketiq_resume', p_run_id::text);

    return query select p_run_id, true, 'claimed'::text, p_step, p_source_run_id;
end;
$$;

comment on function ticketiq.fork_run(uuid, integer, uuid, text, text, jsonb, text, jsonb, text) is
'A new run whose history up to p_step is the source''s, sealed anew for its id, claimed for the one resume path; audited agent.run.forked and agent.run.fork_made. TQ001, TQ004, TQ007, TQ013.';
