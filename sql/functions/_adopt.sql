-- ticketiq._adopt(holder, ttl, run ids): adopt the claimed runs the caller
-- chose and locked (ticketiq._adoptable), all in a few set-wide statements.
--
-- The one adoption of ticketiq.adopt_run and ticketiq.adopt_runs.  Each
-- run's epoch is raised by one (I2), its lease given to p_holder for
-- p_ttl, its adoption audited (agent.run.adopted), the text of its next
-- step an earlier attempt streamed made void (a 'resumed' event, migration
-- 0019), and its resume audited from its first moment (I14): its one
-- agent.run.crash_resumed (or resumed) row of this epoch, no settlements yet,
-- complete when its last step left no call (the transcript is then told),
-- which ticketiq.record_resume adds to as each call is settled.  Set-wide
-- for a batch: a thousand runs a statement, not a thousand function calls
-- (bench section 8: 0.5 ms of the server a run so).  Returns one row per
-- run, in p_run_ids' order, with everything a resume needs (see
-- ticketiq.adopt_run).
-- Limits:
--   p_holder   the adopter (checked by the caller)
--   p_ttl      the new leases' time, positive (checked by the caller)
--   p_run_ids  runs the caller locked, claimed (others are not adopted)
-- SQLSTATEs: TQ003 a TTL so short a new lease lapsed before the resume rows
--   were written (the statement, and so the adoption, is undone).
create or replace function ticketiq._adopt(
    p_holder text,
    p_ttl interval,
    p_run_ids uuid[]
)
returns setof ticketiq.adopted_run
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_runs ticketiq.runs[];
    v_complete boolean[];
    v_lapsed timestamptz;
    v_lapsed_run uuid;
begin
    with adopted as (
        update ticketiq.runs as r
        set status = 'running',
            epoch = r.epoch + 1,
            lease_holder = p_holder,
            lease_expires_at = v_now + p_ttl,
            updated_at = v_now
        from unnest(p_run_ids) with ordinality as o (run_id, n)
        where r.run_id = o.run_id and r.status = 'claimed'
        returning r, o.n
    )
    select array_agg(a.r order by a.n),
        -- complete from the start when the last step left no call to settle
        array_agg(not exists (
            select 1 from ticketiq.checkpoints as k
            where k.run_id = (a.r).run_id and k.step = (a.r).last_step
                and jsonb_array_length(coalesce(k.body -> 'calls', '[]')) > 0
        ) order by a.n)
    into v_runs, v_complete
    from adopted as a;
    if v_runs is null then
        return;
    end if;

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    select v_now, 'agent.run.adopted', a.run_id, a.epoch, p_holder,
        jsonb_build_object('loss_count', a.loss_count, 'step', a.last_step)
    from unnest(v_runs) as a;
    -- The run's event stream (migration 0019): whatever text of the next step
    -- an earlier attempt streamed is void, and the step is asked again.
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    select a.run_id, 'resumed', a.last_step, a.epoch,
        jsonb_build_object('loss_count', a.loss_count, 'from_step', a.last_step,
            'discard', jsonb_build_object('step', a.last_step + 1, 'epochs_before', a.epoch)),
        v_now
    from unnest(v_runs) as a;
    -- The resume's own audit row, from its first moment (I14): settlements follow.
    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    select v_now, o.o_event, a.run_id, a.epoch, p_holder, o.o_detail
    from unnest(v_runs) with ordinality as a
    cross join lateral ticketiq._resume_opened(
        a.claim_reason, a.last_step, a.loss_count, '[]', v_complete[a.ordinality]
    ) as o;
    insert into ticketiq.transcript_entries (run_id, kind, body, at)
    select a.run_id, 'resumed', jsonb_build_object(
        'step', a.last_step, 'loss_count', a.loss_count, 'settlements', '[]'::jsonb
    ), v_now
    from unnest(v_runs) with ordinality as a
    where v_complete[a.ordinality];
    -- The clock after the writes: a lease that lapsed meanwhile was never held.
    select a.run_id, a.lease_expires_at into v_lapsed_run, v_lapsed
    from unnest(v_runs) as a
    order by a.lease_expires_at
    limit 1;
    if v_lapsed <= ticketiq.now() then
        raise exception 'lease of run % lapsed at %', v_lapsed_run, v_lapsed
            using errcode = 'TQ003',
            hint = 'adopt with a longer TTL';
    end if;

    return query
    select a.run_id, a.epoch::bigint, a.lease_expires_at,
        a.loss_count::integer, a.last_step::integer, a.owner::text,
        a.run_as::text, a.channel::text, a.entry_point::text,
        a.may_wait, a.correlation_id::text, a.input, a.meta::jsonb,
        a.stop_requested_at is not null,
        c.body, c.seal::text, c.seal_key_id::text,
        coalesce((
            select jsonb_agg(jsonb_build_object(
                'call_id', k.call_id,
                'tool', k.tool,
                'arguments', k.arguments,
                'state', k.state,
                'classification', k.classification,
                'marked_classification', k.marked_classification,
                'step_key', k.step_key,
                'settlement', k.settlement,
                'outcome', k.outcome,
                'seal', k.seal,
                'seal_key_id', k.seal_key_id,
                'approval_id', k.approval_id,
                -- whether the call is (or was) sent under its approval's key: filed
                -- before its mark (a resume's request, filed later, only gates it)
                'approval_keyed', k.approval_id is not null
                    and (k.marked_epoch is null or ar.requested_epoch <= k.marked_epoch)
            ) order by k.ordinal)
            from ticketiq.calls as k
            left join ticketiq.approval_requests as ar on k.approval_id = ar.approval_id
            where k.run_id = a.run_id and k.step = a.last_step
        ), '[]'::jsonb),
        s.body, s.seal, s.seal_key_id, s.handed_on_at is not null,
        -- a last checkpoint that is a link: its chain, from the last base on
        case when c.body ? 'chain' then coalesce((
            select jsonb_agg(jsonb_build_object(
                'step', k.step, 'body', k.body, 'seal', k.seal, 'seal_key_id', k.seal_key_id
            ) order by k.step)
            from ticketiq.checkpoints as k
            where k.run_id = a.run_id
                and k.step <= a.last_step
                and k.step >= (
                    select coalesce(max(b.step), 1) from ticketiq.checkpoints as b
                    where b.run_id = a.run_id and b.step <= a.last_step
                        and b.body ->> 'chain' = 'base'
                )
        ), '[]'::jsonb) end
    from unnest(v_runs) with ordinality as a
    left join ticketiq.checkpoints as c
        on c.run_id = a.run_id and c.step = a.last_step
    left join ticketiq.answers as s
        on s.run_id = a.run_id
    order by a.ordinality;
end;
$$;

comment on function ticketiq._adopt(text, interval, uuid[]) is
'Internal: adopt the claimed runs the caller locked (epoch + 1, lease to p_holder for p_ttl, adoption and resume audited, streamed text void), set-wide, and return each with its last checkpoint, call rows, chain and any sealed answer; TQ003 if a lease lapsed within the statement.';
