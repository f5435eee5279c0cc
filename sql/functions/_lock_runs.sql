-- ticketiq._lock_runs(run ids, for update): lock the runs' rows a grouped
-- statement writes, in run id order, waiting for none of them.
--
-- The grouped statements (ticketiq.write_checkpoints, ticketiq.record_resumes)
-- lock their runs first and leave out a run whose row another transaction
-- holds: they never wait for a row lock, so they cannot deadlock with a
-- lease renewal that locks the same runs in another order.  The lock is the
-- one the statement takes again later, so it never waits then either:
-- FOR NO KEY UPDATE for write_checkpoints' fenced update, FOR UPDATE
-- (p_for_update) for record_resumes, whose items go through ticketiq._fence.
-- It returns the run ids locked (an unknown run is not among them).
-- Limits:
--   p_run_ids     any array of run ids (nulls and unknown runs lock nothing)
--   p_for_update  true: FOR UPDATE; false or null: FOR NO KEY UPDATE
-- SQLSTATEs: none.
create or replace function ticketiq._lock_runs(p_run_ids uuid[], p_for_update boolean default false)
returns uuid[]
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_locked uuid [];
begin
    -- Twice, because a lock mode cannot be a parameter (dynamic SQL would plan
    -- each group's lock again).
    if coalesce(p_for_update, false) then
        select coalesce(array_agg(l.run_id), '{}') into v_locked
        from (
            select r.run_id
            from ticketiq.runs as r
            where r.run_id = any(p_run_ids)
            order by r.run_id
            for update skip locked
        ) as l;
    else
        select coalesce(array_agg(l.run_id), '{}') into v_locked
        from (
            select r.run_id
            from ticketiq.runs as r
            where r.run_id = any(p_run_ids)
            order by r.run_id
            for no key update skip locked
        ) as l;
    end if;
    return v_locked;
end;
$$;

comment on function ticketiq._lock_runs(uuid[], boolean) is
'Internal: lock the runs'' rows in run id order, SKIP LOCKED (FOR UPDATE when p_for_update, else FOR NO KEY UPDATE); the ids locked (write_checkpoints and record_resumes lock with it, never waiting).';
