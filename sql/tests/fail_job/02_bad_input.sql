-- fail_job: an empty or null reason raises TQ004 and changes nothing.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.fail_job(j.job_id, 1, '') from ticketiq.jobs as j$$, 'TQ004', null, 'an empty reason'
);
select throws_ok(
    $$select ticketiq.fail_job(j.job_id, 1, null) from ticketiq.jobs as j$$, 'TQ004', null, 'a null reason'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the rejected failures changed nothing'
);

select * from finish();
rollback;
