-- record_trace_context: an entry's trace context is its owner's (issue 46,
-- finding 1).  Two owners whose senders use the same id each record their
-- own traceparent, and each owner's run reads its own, never the other's.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select is(
    ticketiq.record_trace_context('a2a', 'task-1', 'alice', tiq_test.traceparent('a', 'b')),
    true, 'alice''s context recorded'
);
select is(
    ticketiq.record_trace_context('a2a', 'task-1', 'bob', tiq_test.traceparent('c', 'd')),
    true, 'bob''s context of the same sender id recorded too'
);
create temporary table accepted as
select
    'alice' as owner,
    e.run_id
from ticketiq.accept_entry('a2a', 'task-1', '{}', 'alice', 'alice', 'a2a') as e
union all
select
    'bob' as owner,
    e.run_id
from ticketiq.accept_entry('a2a', 'task-1', '{}', 'bob', 'bob', 'a2a') as e;
select is(
    ticketiq.run_trace_context((select a.run_id from accepted as a where a.owner = 'alice')),
    tiq_test.traceparent('a', 'b'),
    'alice''s run reads alice''s traceparent'
);
select is(
    ticketiq.run_trace_context((select a.run_id from accepted as a where a.owner = 'bob')),
    tiq_test.traceparent('c', 'd'),
    'bob''s run reads bob''s, not alice''s'
);

select * from finish();
rollback;
