-- record_trace_context: TQ004 for a bad kind, sender id or traceparent; nothing written.
begin;
select plan(5);

select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.record_trace_context('', 'k', '00-' || repeat('a', 32) || '-' || repeat('b', 16) || '-01')$$,
    'TQ004', null, 'an empty kind'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', null, '00-' || repeat('a', 32) || '-' || repeat('b', 16) || '-01')$$,
    'TQ004', null, 'no sender id'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', 'k', 'not a traceparent')$$,
    'TQ004', 'traceparent must be a W3C traceparent, got not a traceparent', 'not a traceparent'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', 'k', '00-' || repeat('A', 32) || '-' || repeat('b', 16) || '-01')$$,
    'TQ004', null, 'upper-case hex'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
