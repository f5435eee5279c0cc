-- purge_history: purging one owner's run deletes that owner's trace context
-- only; another owner's context of the same (kind, sender id), whose run is
-- in flight, stays (issue 46, finding 1).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.record_trace_context('a2a', 'task-1', 'alice', tiq_test.traceparent('a', 'b'));
select ticketiq.accept_entry('a2a', 'task-1', '{}', 'alice', 'alice', 'a2a');
select ticketiq.claim_entries('p1', 8, 10);
select ticketiq.fail_run(r.run_id, 1, 'refused') from ticketiq.runs as r;
select tiq_test.advance(3600);
select ticketiq.record_trace_context('a2a', 'task-1', 'bob', tiq_test.traceparent('c', 'd'));
select ticketiq.accept_entry('a2a', 'task-1', '{}', 'bob', 'bob', 'a2a');

select is((select p.entries_purged from ticketiq.purge_history(1800) as p), 1, 'alice''s finished entry purged');
select is(
    ticketiq.run_trace_context((select e.planned_run_id from ticketiq.entries as e where e.owner = 'bob')),
    tiq_test.traceparent('c', 'd'),
    'bob''s context stays'
);
select is((select count(*)::integer from ticketiq.trace_contexts), 1, 'one context left');

select * from finish();
rollback;
