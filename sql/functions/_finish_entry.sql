-- ticketiq._finish_entry(run, state, outcome, now): record an entry's end, once.
--
-- Called by the functions that end a run (hand_on_answer, fail_run,
-- stop_run, sweep_lapsed, take_over_child) in their own statement, so an
-- entry point's outcome (a cron fire's, an A2A task's, a Teams turn's) is
-- recorded exactly when its run ends and never twice: only a running entry
-- changes.  Also wakes a parent suspended on this run (wait key
-- child:<run id>).
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
begin
    update ticketiq.entries as e
    set state = p_state,
        outcome = p_outcome,
        finished_at = p_now
    where e.run_id = p_run_id and e.state = 'running';
    perform ticketiq._wake('child:' || p_run_id::text, p_now);
end;
$$;

comment on function ticketiq._finish_entry(uuid, text, jsonb, timestamptz) is
'Internal: record the end of a run''s entry (once) and wake a parent waiting on it.';
