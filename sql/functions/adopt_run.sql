-- ticketiq.adopt_run(holder, ttl, run id): take a claimed run to resume it.
--
-- Picks the oldest claimed run (or p_run_id when given) with FOR UPDATE
-- SKIP LOCKED, so of several resume workers exactly one adopts it (without
-- p_run_id, a child whose parent is running or claimed is left to the
-- parent: ticketiq.take_over_child; not a child its parent waits for with
-- others, the first to end, ticketiq.first_waits: its parent never runs
-- it, any process does), raises
-- its epoch by one (I2), gives p_holder its lease for p_ttl_seconds and
-- returns in the same statement everything a resume needs: the run, its
-- last checkpoint with its seal (which lists every call of that step), the
-- state of each changing call of that step (as recorded in the database,
-- e.g. in doubt, with the classification its mark recorded; reads have no
-- row and are made again; each row with the seal of its state, which the
-- caller verifies before acting on it), and a sealed answer not yet handed on.  When the answer is
-- sealed, last_step is the answer's step, of which there is no checkpoint:
-- the checkpoint columns are null and calls is empty (a resume then only
-- hands the answer on).  A workflow run is adopted only by a process that
-- can run it: when p_holder's process declared its workflows
-- (ticketiq.declare_workflows), a run whose first checkpoint names a
-- workflow and version not among them, or whose last checkpoint was written
-- by newer code it does not run (ticketiq._can_run_workflow: pinned), is left
-- claimed for a process that can (ticketiq.unrunnable_runs lists those no live
-- process can run), and
-- one before its first checkpoint only by a process that declared a
-- workflow of its entry kind (an app without it would take it for an agent
-- run); a holder that declared nothing adopts any run.  When the last checkpoint is a link of a chain
-- (schema 12: each checkpoint holds what its step added), checkpoint_chain
-- is its run's checkpoints from the chain's last base to the last step, in
-- order, each {step, body, seal, seal_key_id}: the conversation so far, in
-- this one statement; null for a checkpoint written before schema 12 (a
-- full body).  The caller verifies the seals, the chain in order, before
-- executing anything (I9).  Returns no
-- row when there is nothing to adopt.  The resume is audited from here: the
-- same statement writes its agent.run.crash_resumed (or resumed) row with
-- no settlements yet (ticketiq.record_resume), which the adopter adds to
-- as it settles each call (I14).
-- Limits:
--   p_holder       1..512
--   p_ttl_seconds  seconds in (0, 1e9]
--   p_run_id       any run id, or null (the oldest claimed run)
-- SQLSTATEs: TQ004 (bad holder or TTL), TQ003 (a TTL so short the new lease
--   lapsed before the adoption's own resume row was written: nothing adopted).
create or replace function ticketiq.adopt_run(
    p_holder text,
    p_ttl_seconds double precision,
    p_run_id uuid default null
)
returns setof ticketiq.adopted_run
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
    v_run_id uuid;
    v_run ticketiq.runs;
    v_can jsonb;
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    select p.workflows into v_can from ticketiq.processes as p where p.process_id = p_holder;

    select r.run_id into v_run_id
    from ticketiq.runs as r
    where r.status = 'claimed' and (p_run_id is null or r.run_id = p_run_id)
        -- A child whose parent runs (or is up for adoption) is left to its parent,
        -- which asks again by its delegation key and takes it over once.
        and (p_run_id is not null or r.parent_run_id is null or not exists (
            select 1 from ticketiq.runs as p
            where p.run_id = r.parent_run_id and p.status in ('running', 'claimed')
        ) or exists (select 1 from ticketiq.first_waits as fw where fw.run_id = r.run_id))
        -- A run stays on the workflow version it started with: adopted only by a
        -- process whose code can run that version (a rolling deploy's old worker).
        -- An agent run's kind names no workflow version: no checkpoint is read for it.
        and (v_can is null
            or (r.entry_point <> 'cron' and not exists (
                select 1 from ticketiq.workflow_versions as w where w.kind = r.entry_point
            ))
            or coalesce((
                select ticketiq._can_run_workflow(v_can, f.body, l.body)
                from ticketiq.checkpoints as f
                left join ticketiq.checkpoints as l
                    on l.run_id = r.run_id and l.step = r.last_step
                where f.run_id = r.run_id and f.step = 1 and f.body -> 'counters' ? 'workflow'
            ),
            -- before its first checkpoint: any version of a workflow of its kind
            r.entry_point = 'cron' or exists (
                select 1 from ticketiq.workflow_versions as w
                where w.kind = r.entry_point and v_can ? w.name
            )))
    order by r.updated_at
    limit 1
    for update skip locked;
    if v_run_id is null then
        return;
    end if;

    update ticketiq.runs as r
    set status = 'running',
        epoch = r.epoch + 1,
        lease_holder = p_holder,
        lease_expires_at = v_now + v_ttl,
        updated_at = v_now
    where r.run_id = v_run_id
    returning r.* into v_run;

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.adopted', v_run.run_id, v_run.epoch, p_holder,
        jsonb_build_object('loss_count', v_run.loss_count, 'step', v_run.last_step));
    -- The run's event stream (migration 0019): whatever text of the next step
    -- an earlier attempt streamed is void, and the step is asked again.
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (v_run.run_id, 'resumed', v_run.last_step, v_run.epoch,
        jsonb_build_object('loss_count', v_run.loss_count, 'from_step', v_run.last_step,
            'discard', jsonb_build_object('step', v_run.last_step + 1, 'epochs_before', v_run.epoch)),
        v_now);
    -- The resume's own audit row, from its first moment (I14): settlements follow.
    perform ticketiq.record_resume(v_run.run_id, v_run.epoch, '[]');

    return query
    select v_run.run_id, v_run.epoch::bigint, v_run.lease_expires_at, v_run.loss_count::integer,
        v_run.last_step::integer, v_run.owner::text, v_run.run_as::text, v_run.channel::text,
        v_run.entry_point::text, v_run.may_wait, v_run.correlation_id::text, v_run.input,
        v_run.meta::jsonb, v_run.stop_requested_at is not null,
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
            where k.run_id = v_run.run_id and k.step = v_run.last_step
        ), '[]'::jsonb),
        a.body, a.seal, a.seal_key_id, a.handed_on_at is not null,
        -- a last checkpoint that is a link: its chain, from the last base on
        case when c.body ? 'chain' then coalesce((
            select jsonb_agg(jsonb_build_object(
                'step', k.step, 'body', k.body, 'seal', k.seal, 'seal_key_id', k.seal_key_id
            ) order by k.step)
            from ticketiq.checkpoints as k
            where k.run_id = v_run.run_id
                and k.step <= v_run.last_step
                and k.step >= (
                    select coalesce(max(b.step), 1) from ticketiq.checkpoints as b
                    where b.run_id = v_run.run_id and b.step <= v_run.last_step
                        and b.body ->> 'chain' = 'base'
                )
        ), '[]'::jsonb) end
    from (select 1) as one
    left join ticketiq.checkpoints as c
        on c.run_id = v_run.run_id and c.step = v_run.last_step
    left join ticketiq.answers as a
        on a.run_id = v_run.run_id;
end;
$$;

comment on function ticketiq.adopt_run(text, double precision, uuid) is
'Adopt one claimed run (SKIP LOCKED, epoch + 1, lease to p_holder) and return it with its last checkpoint and any sealed answer.';
