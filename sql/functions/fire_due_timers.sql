-- ticketiq.fire_due_timers(limit): fire the workflow timers that are due, once.
--
-- Any process may call it (each worker's entry pump does, beside
-- fire_due_crons): the timers due by the database clock are locked FOR
-- UPDATE SKIP LOCKED, so each fires in exactly one call however many
-- race; each becomes 'fired' and wakes its own run if that run is
-- suspended on the timer's wait key (ticketiq._wake: claimed at epoch + 1,
-- NOTIFY ticketiq_resume).  A timer is its run's: another run suspended on
-- the same key is not woken by it (issue 46, finding 4).  A timer fires
-- once: a fired or cancelled timer is never read again, and a run that is
-- not (or no longer) suspended on the key is not touched.
-- Returns the timers fired and how many runs each woke.
-- Limits:
--   p_limit  >= 1
-- SQLSTATEs: TQ004 (bad limit).
create or replace function ticketiq.fire_due_timers(p_limit integer default 100)
returns table (
    run_id uuid,
    timer_key text,
    wait_key text,
    woken integer
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_timer ticketiq.workflow_timers;
begin
    if p_limit is null or p_limit < 1 then
        raise exception 'limit must be >= 1' using errcode = 'TQ004';
    end if;
    for v_timer in
        select t.*
        from ticketiq.workflow_timers as t
        where t.state = 'set' and t.due_at <= v_now
        order by t.due_at
        limit p_limit
        for update skip locked
    loop
        update ticketiq.workflow_timers as t
        set state = 'fired', fired_at = v_now
        where t.run_id = v_timer.run_id and t.timer_key = v_timer.timer_key;
        return query select v_timer.run_id, v_timer.timer_key, v_timer.wait_key,
            ticketiq._wake(v_timer.wait_key, v_now, v_timer.run_id);
    end loop;
end;
$$;

comment on function ticketiq.fire_due_timers(integer) is
'Fire each due workflow timer once (SKIP LOCKED) and wake its own run if suspended on its wait key.';
