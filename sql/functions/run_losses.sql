-- ticketiq.run_losses(run): the losses of one run, oldest first.
--
-- One row per agent.run.lease_lapsed audit row of the run: when the loss was
-- recorded, the process that lost it (its lease holder then), how the loss
-- was detected (session_ended: its liveness session ended; lease_lapsed:
-- its lease expired) and the run's loss count after it.  The process that
-- resumes a run names the dead process and the loss count on its resume
-- span (ticketiq_pg/observe/tracing.py) from the newest row.  Reads only.
-- Limits:
--   p_run_id  a run (an unknown one has no rows)
-- SQLSTATEs: none.
create or replace function ticketiq.run_losses(
    p_run_id uuid
)
returns table (
    at timestamptz,
    lapsed_holder text,
    detected_by text,
    loss_count integer
)
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select
        a.at,
        a.detail ->> 'lapsed_holder',
        coalesce(a.detail ->> 'reason', 'lease_lapsed'),
        (a.detail ->> 'loss_count')::integer
    from ticketiq.audit as a
    where a.run_id = p_run_id and a.event = 'agent.run.lease_lapsed'
    order by a.audit_id
$$;

comment on function ticketiq.run_losses(uuid) is
'The losses of one run, oldest first: when, the process that lost it, how it was detected, the loss count after it (reads only).';
