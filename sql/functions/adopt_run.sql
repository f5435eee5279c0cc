-- ticketiq.adopt_run(holder, ttl, run id): take a claimed run to resume it.
--
-- Picks the oldest claimed run (or p_run_id when given) with FOR UPDATE
-- SKIP LOCKED (ticketiq._adoptable), so of several resume workers exactly
-- one adopts it, and adopts it as ticketiq._adopt does (without
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
declare
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    -- The choice and the adoption are each written once (ticketiq._adoptable,
    -- ticketiq._adopt): adopt_runs makes them for a batch.
    return query
    select a.* from ticketiq._adopt(p_holder, v_ttl, array(
        select c.run_id
        from ticketiq._adoptable(p_holder, p_run_id, 1) with ordinality as c (run_id, n)
        order by c.n
    )) as a;
end;
$$;

comment on function ticketiq.adopt_run(text, double precision, uuid) is
'Adopt one claimed run (SKIP LOCKED, epoch + 1, lease to p_holder) and return it with its last checkpoint and any sealed answer.';
