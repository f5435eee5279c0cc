-- record_trace_context: a traceparent the W3C parser refuses is TQ004 however
-- well-formed its shape: version ff, an all-zero trace id, an all-zero span id
-- (issue 46, finding 7); nothing written.
begin;
select plan(4);

select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.record_trace_context(
        'run', 'k', 'o', overlay(tiq_test.traceparent('a', 'b') placing 'ff' from 1)
    )$$,
    'TQ004', null, 'version ff'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', 'k', 'o', tiq_test.traceparent('0', 'b'))$$,
    'TQ004', null, 'an all-zero trace id'
);
select throws_ok(
    $$select ticketiq.record_trace_context('run', 'k', 'o', tiq_test.traceparent('a', '0'))$$,
    'TQ004', null, 'an all-zero span id'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
