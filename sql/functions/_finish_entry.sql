-- ticketiq._finish_entry(run, state, outcome, now): record an entry's end, once.
--
-- Called by the functions that end a run (hand_on_answer, fail_run,
-- stop_run, sweep_lapsed, take_over_child) in their own statement, so an
-- entry point's outcome (a cron fire's, an A2A task's, a Teams turn's) is
-- recorded exactly when its run ends and never twice: only a running entry
-- changes.  Also wakes a parent suspended on this run (wait key
-- child:<run id>); a run its parent waits for with others (ctx.first,
-- ticketiq.first_waits) is recorded as its group's first end unless one is
-- (ticketiq.first_ends, written once), and wakes the parent only then: a
-- later end of the group wakes nothing.
create or replace function ticketiq._finish_entry(
    p_run_id uuid,
    p_state text,
    p_outcome jsonb,
    p_now timestamptz
)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_wait record;
begin
    update ticketiq.entries as e
    set state = p_state,
        outcome = p_outcome,
        finished_at = p_now
    where e.run_id = p_run_id and e.state = 'running';
    perform ticketiq._wake('child:' || p_run_id::text, p_now);
    for v_wait in
        insert into ticketiq.first_ends (run_id, wait_key, child_run_id, place, ended_at)
        select w.parent_run_id, w.wait_key, w.run_id, w.place, p_now
        from ticketiq.first_waits as w where w.run_id = p_run_id
        on conflict do nothing
        returning first_ends.run_id, first_ends.wait_key
    loop
        perform ticketiq._wake(v_wait.wait_key, p_now, v_wait.run_id);
    end loop;
end;
$$;

comment on function ticketiq._finish_entry(uuid, text, jsonb, timestamptz) is
'Internal: record the end of a run''s entry (once) and wake a parent waiting on it.';
