-- record_trace_context: the first traceparent of an entry is kept; a second
-- returns false and changes nothing; run_trace_context finds it through the
-- entry accepted after it, by the run id accept_entry answered.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select is(
    ticketiq.record_trace_context('run', 'key-1', 'alice', tiq_test.traceparent('a', 'b')),
    true, 'recorded'
);
select is(
    ticketiq.record_trace_context('run', 'key-1', 'alice', tiq_test.traceparent('c', 'd')),
    false, 'a second record of the entry changes nothing'
);
create temporary table accepted as
select e.run_id from ticketiq.accept_entry('run', 'key-1', '{}', 'alice', 'alice', 'run', false, true) as e;
select is(
    ticketiq.run_trace_context((select a.run_id from accepted as a)),
    tiq_test.traceparent('a', 'b'),
    'found by the run id the entry was answered with'
);
select is(ticketiq.run_trace_context(tiq_test.rid(9)), null, 'none for another run');

select * from finish();
rollback;
