-- ticketiq.write_checkpoint(...): the write-ahead checkpoint of one model step.
--
-- Called once after model step p_step answered with tool calls and before
-- any of them is made (invariant I5).  In this one statement it
--   * validates the seal and the body (TQ004, see
--     ticketiq._validate_checkpoint) — checked first, as they need no lock,
--   * fences the writer (TQ001/TQ002/TQ003/TQ006, see ticketiq._fence),
--   * refuses a run whose answer is sealed (TQ005 answer_sealed),
--   * stores the sealed checkpoint, and (ticketiq._step_calls) closes the
--     changing calls of the previous step and records one ticketiq.calls
--     row per changing call of this one.
-- p_step must be the run's last step + 1.  Writing the same step again with
-- the same epoch and seal (a retried statement) returns the stored row and
-- changes nothing; any other step raises TQ007 step_conflict.
-- stop_requested tells the loop that a Stop was asked (ticketiq.request_stop),
-- so it stops before making any call without another round trip.
-- A step of reads is one SQL statement inside the function (a fenced UPDATE
-- of the run with the checkpoint's insert hanging off it); the calls'
-- statements run only when there are calls to close or to record, and the
-- error paths are diagnosed only when that UPDATE matches nothing.  The
-- diagnosis locks the row and reads it as it stands: where it finds the
-- writer's next step (the UPDATE's snapshot held an older row, as when a
-- renewal's commit was slow), it writes the step once more instead.  The
-- lease is judged by the clock read once the run's row is locked (I1): a
-- write that waited for another transaction's lock until its lease lapsed
-- raises TQ003 and writes nothing; written_at is the time after the wait.
-- Limits:
--   p_run_id       the run
--   p_epoch        the writer's epoch
--   p_step         the run's last step + 1
--   p_body         a checkpoint (ticketiq._validate_checkpoint): each call_id
--                  1..256 characters
--   p_seal         1..1024
--   p_seal_key_id  1..512
-- SQLSTATEs: TQ004 (bad seal, key id or body), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence), TQ005 answer sealed, TQ007 not the next step.
create or replace function ticketiq.write_checkpoint(
    p_run_id uuid,
    p_epoch bigint,
    p_step integer,
    p_body jsonb,
    p_seal text,
    p_seal_key_id text
)
returns table (
    run_id uuid,
    step integer,
    written_at timestamptz,
    lease_expires_at timestamptz,
    replayed boolean,
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
    v_prior ticketiq.checkpoints;
    v_expires timestamptz;
    v_stop boolean;
    v_calls boolean;
    v_locked_at timestamptz;
begin
    if coalesce(length(p_seal), 0) not between 1 and 1024
        or coalesce(length(p_seal_key_id), 0) not between 1 and 512 then
        perform ticketiq._require_text('seal', p_seal, 1024);
        perform ticketiq._require_text('seal_key_id', p_seal_key_id, 512);
    end if;
    if not ticketiq._checkpoint_ok(p_body) then
        perform ticketiq._validate_checkpoint(p_body);
    end if;

    -- One statement does the writes of the common case, a step of reads:
    -- the fenced UPDATE of the run (fence, step order and sealed-answer
    -- check in its WHERE; no indexed column changes, so it can be a HOT
    -- update) and, only if it matched, the checkpoint.  It also finds out
    -- whether the previous step left calls open and whether this step asks
    -- for a changing call: only then is ticketiq._step_calls called.  Its
    -- RETURNING reads the clock after the row lock (the WHERE's clock was
    -- read before any wait for it).  A step under 1 (which can never follow)
    -- goes straight to the diagnosis.
    <<attempt>>
    for v_try in 1 .. 2 loop
        if p_step >= 1 then
            with fenced as (
                update ticketiq.runs as r
                set last_step = p_step
                where r.run_id = p_run_id
                    and r.epoch = p_epoch
                    and r.status = 'running'
                    and r.lease_expires_at > v_now
                    and r.last_step = p_step - 1
                    and not exists (select 1 from ticketiq.answers as a where a.run_id = p_run_id)
                returning r.lease_expires_at, r.stop_requested_at, ticketiq.now() as locked_at
            ),

            written as (
                insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id, written_at)
                select
                    p_run_id, p_step, p_epoch,
                    -- the pending rows' seals go on the rows, not in the checkpoint
                    case when p_body ? 'call_seals' then p_body - 'call_seals' else p_body end,
                    p_seal, p_seal_key_id, f.locked_at
                from fenced as f
                where f.lease_expires_at > f.locked_at
            ),

            -- The run's event stream (migration 0019).  The event's body (the
            -- step's text and calls) is the checkpoint's, read from it by
            -- ticketiq.run_events_after: written once, not copied into the row.
            evented as (
                insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
                select p_run_id, 'step_written', p_step, p_epoch, '{}'::jsonb, f.locked_at
                from fenced as f
                where f.lease_expires_at > f.locked_at
            )

            select
                f.lease_expires_at,
                f.locked_at,
                f.stop_requested_at is not null,
                exists (
                    select 1 from ticketiq.calls as c
                    where c.run_id = p_run_id
                        and c.step = p_step - 1
                        and c.state in ('pending', 'in_doubt')
                )
                or jsonb_path_exists(p_body, '$.calls[*] ? (@.classification != "read")')
            into v_expires, v_locked_at, v_stop, v_calls
            from fenced as f;
        end if;
        exit attempt when v_expires is not null;

        -- Diagnosis: the row locked, read as it stands now.
        v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;
        if exists (select 1 from ticketiq.answers as a where a.run_id = p_run_id) then
            raise exception 'run % has a sealed answer and takes no further step', p_run_id
                using errcode = 'TQ005';
        end if;
        if v_try = 1 and p_step >= 1 and p_step = v_run.last_step + 1 then
            -- The writer holds the run and this is its next step: the UPDATE's
            -- snapshot saw an older row.  A renewal that read the clock before
            -- the lease lapsed but committed after it (a slow commit in a
            -- failover) leaves the committed lease lapsed when the UPDATE reads
            -- it, so the UPDATE skips the row without waiting for its lock;
            -- _fence waited and found the lease alive.  Write again, under the
            -- lock and by the clock now.  (Refusing it was TQ007 and failed a
            -- run nothing had taken from its writer.)
            v_now := ticketiq.now();
            continue attempt;
        end if;
        if p_step is not null and p_step = v_run.last_step and p_step >= 1 then
            select c.* into v_prior
            from ticketiq.checkpoints as c
            where c.run_id = p_run_id and c.step = p_step;
            if v_prior.epoch = p_epoch and v_prior.seal = p_seal then
                run_id := p_run_id;
                step := p_step;
                written_at := v_prior.written_at;
                lease_expires_at := v_run.lease_expires_at;
                replayed := true;
                stop_requested := v_run.stop_requested_at is not null;
                return next;
                return;
            end if;
        end if;
        raise exception 'run % expects checkpoint of step %, got step %', p_run_id,
            v_run.last_step + 1, coalesce(p_step::text, 'null')
            using errcode = 'TQ007';
    end loop attempt;

    if v_expires is not null and v_expires <= v_locked_at then
        -- The lease lapsed while this write waited for the run's row: the
        -- error undoes the statement's update, and nothing was inserted.
        raise exception 'lease checkpoint:% lapsed at %', p_run_id, v_expires
            using errcode = 'TQ003',
                  hint = 'The lease ran out by the database clock; this attempt must stop.';
    end if;
    if v_calls then
        perform ticketiq._step_calls(
            array[p_run_id], array[p_epoch], array[p_step], jsonb_build_array(p_body), v_locked_at
        );
    end if;

    run_id := p_run_id;
    step := p_step;
    written_at := v_locked_at;
    lease_expires_at := v_expires;
    replayed := false;
    stop_requested := v_stop;
    return next;
end;
$$;

comment on function ticketiq.write_checkpoint(uuid, bigint, integer, jsonb, text, text) is
'Write-ahead checkpoint of step p_step (= last step + 1), fenced by epoch and lease, with a row per changing call; closes the previous step''s calls. TQ001-TQ007.';
