-- ticketiq.run_trace_context(run): the traceparent a run's entry arrived with.
--
-- The W3C traceparent ticketiq.record_trace_context recorded for the entry
-- that started the run (found by its run id, or the run id it was answered
-- with before its run started; the entry's owner's, never another owner's of
-- the same sender id), or null: a run without one has a trace of its
-- own (its trace id is its run id).  Every process that drives the run reads
-- it, so the spans before and after a loss hang from the same parent.  Reads
-- only.
-- Limits:
--   p_run_id  a run (an unknown one gives null)
-- SQLSTATEs: none.
create or replace function ticketiq.run_trace_context(
    p_run_id uuid
)
returns text
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select t.traceparent
    from ticketiq.entries as e
    inner join ticketiq.trace_contexts as t
        on t.kind = e.kind and t.owner = e.owner and t.sender_id = e.sender_id
    where e.run_id = p_run_id or e.planned_run_id = p_run_id
    limit 1
$$;

comment on function ticketiq.run_trace_context(uuid) is
'The W3C traceparent the run''s entry arrived with, or null (reads only).';
