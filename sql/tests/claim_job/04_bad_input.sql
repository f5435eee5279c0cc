-- claim_job: an empty holder, a TTL that is not positive, or kinds that
-- are empty or hold null or empty elements raise TQ004 and claim nothing.
begin;
select plan(10);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.claim_job('', 8)$$, 'TQ004', null, 'an empty holder');
select throws_ok($$select ticketiq.claim_job(null, 8)$$, 'TQ004', null, 'a null holder');
select throws_ok($$select ticketiq.claim_job('p1', 0)$$, 'TQ004', null, 'ttl 0');
select throws_ok($$select ticketiq.claim_job('p1', -1)$$, 'TQ004', null, 'ttl negative');
select throws_ok($$select ticketiq.claim_job('p1', 'NaN')$$, 'TQ004', null, 'ttl NaN');
select throws_ok($$select ticketiq.claim_job('p1', null)$$, 'TQ004', null, 'ttl null');
select throws_ok($$select ticketiq.claim_job('p1', 8, array[]::text[])$$, 'TQ004', null, 'no kinds');
select throws_ok(
    $$select ticketiq.claim_job('p1', 8, array['source_sync', null])$$, 'TQ004', null, 'a null kind'
);
select throws_ok(
    $$select ticketiq.claim_job('p1', 8, array['source_sync', ''])$$, 'TQ004', null, 'an empty kind'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the rejected claims changed nothing'
);

select * from finish();
rollback;
