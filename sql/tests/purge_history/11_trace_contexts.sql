-- purge_history: the traceparent an entry came with goes with the entry; that
-- of an entry kept stays.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.record_trace_context('a2a', 'task-1', 'owner@example.com', tiq_test.traceparent('a', 'b'));
select ticketiq.record_trace_context('a2a', 'task-2', 'owner@example.com', tiq_test.traceparent('c', 'd'));
select tiq_test.entry_run('task-1', 'p1', 8);
select ticketiq.fail_run(r.run_id, 1, 'refused') from ticketiq.runs as r;
select tiq_test.advance(3600);
select tiq_test.entry_run('task-2', 'p1', 8);

select is((select p.entries_purged from ticketiq.purge_history(1800) as p), 1, 'the finished run''s entry');
select is(
    (select count(*)::integer from ticketiq.trace_contexts where sender_id = 'task-1'), 0,
    'its traceparent is gone with it'
);
select is(
    (select count(*)::integer from ticketiq.trace_contexts where sender_id = 'task-2'), 1,
    'that of the entry in flight stays'
);

select * from finish();
rollback;
