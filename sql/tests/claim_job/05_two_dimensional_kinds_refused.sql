-- claim_job: kinds that are not a one-dimensional array raise TQ004 (they
-- used to raise 0A000) and claim nothing.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.claim_job('p1', 8, array[['source_sync'], ['fine_tune']])$$,
    'TQ004', 'kinds must be null or a one-dimensional array of non-empty kinds', 'a two-dimensional array'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing claimed');

select * from finish();
rollback;
