-- ticketiq._lock_runs(run ids): lock the runs' rows a grouped statement
-- writes, in run id order, waiting for none of them.
--
-- The grouped statements (ticketiq.write_checkpoints, ticketiq.record_resumes)
-- lock their runs first and leave out a run whose row another transaction
-- holds: they never wait for a row lock, so they cannot deadlock with a
-- lease renewal that locks the same runs in another order.  It returns the
-- run ids locked (an unknown run is not among them).
-- Limits:
--   p_run_ids  any array of run ids (nulls and unknown runs lock nothing)
-- SQLSTATEs: none.
create or replace function ticketiq._lock_runs(p_run_ids uuid[])
returns uuid[]
language sql
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(array_agg(l.run_id), '{}')
    from (
        select r.run_id
        from ticketiq.runs as r
        where r.run_id = any(p_run_ids)
        order by r.run_id
        for no key update skip locked
    ) as l;
$$;

comment on function ticketiq._lock_runs(uuid[]) is
'Internal: lock the runs'' rows in run id order, SKIP LOCKED; the ids locked (write_checkpoints and record_resumes lock with it, never waiting).';
