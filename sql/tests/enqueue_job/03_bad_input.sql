-- enqueue_job: an empty or null kind, a payload that is not a JSON object,
-- a null resumable flag or an empty key raise TQ004 and change nothing.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.enqueue_job('', '{}', true)$$, 'TQ004', null, 'an empty kind'
);
select throws_ok(
    $$select ticketiq.enqueue_job(null, '{}', true)$$, 'TQ004', null, 'a null kind'
);
select throws_ok(
    $$select ticketiq.enqueue_job('source_sync', '[1, 2]', true)$$, 'TQ004', null, 'a payload array'
);
select throws_ok(
    $$select ticketiq.enqueue_job('source_sync', '"pages"', true)$$, 'TQ004', null, 'a payload string'
);
select throws_ok(
    $$select ticketiq.enqueue_job('source_sync', 'null', true)$$, 'TQ004', null, 'a JSON null payload'
);
select throws_ok(
    $$select ticketiq.enqueue_job('source_sync', null, true)$$, 'TQ004', null, 'a null payload'
);
select throws_ok(
    $$select ticketiq.enqueue_job('source_sync', '{}', null)$$, 'TQ004', null, 'a null resumable flag'
);
select throws_ok(
    $$select ticketiq.enqueue_job('source_sync', '{}', true, '')$$, 'TQ004', null, 'an empty idempotency key'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the rejected calls changed nothing'
);

select * from finish();
rollback;
