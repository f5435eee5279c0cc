-- record_trace_context: TQ004 for a bad kind, sender id, owner or traceparent;
-- nothing written.
begin;
select plan(6);

select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.record_trace_context('', 'k', 'o', tiq_test.traceparent('a', 'b'))$$,
    'TQ004', null, 'an empty kind'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', null, 'o', tiq_test.traceparent('a', 'b'))$$,
    'TQ004', null, 'no sender id'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', 'k', null, tiq_test.traceparent('a', 'b'))$$,
    'TQ004', null, 'no owner'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', 'k', 'o', 'not a traceparent')$$,
    'TQ004', 'traceparent must be a W3C traceparent, got not a traceparent', 'not a traceparent'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', 'k', 'o', tiq_test.traceparent('A', 'b'))$$,
    'TQ004', null, 'upper-case hex'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
