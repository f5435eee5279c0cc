-- enqueue_job: a kind over 512 characters or an idempotency key over 600
-- raises TQ004 naming it and writes nothing (a key of 3,000 characters
-- used to fail with 54000); at the limits the job is queued.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.enqueue_job(repeat('k', 513), '{}', true)$$,
    'TQ004', 'kind must be 1 to 512 characters, got 513', 'a kind of 513 characters'
);
select throws_ok(
    $$select ticketiq.enqueue_job('source_sync', '{}', true, repeat('j', 3000))$$,
    'TQ004', 'idempotency_key must be 1 to 600 characters, got 3000', 'a job key of 3,000 characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select is(
    (select e.created from ticketiq.enqueue_job(repeat('k', 512), '{}', true, repeat(U&'\+01F600', 600)) as e),
    true,
    'at the limits the job is queued'
);

select * from finish();
rollback;
