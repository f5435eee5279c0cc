-- sweep_jobs: an empty sweeper or a limit below 1 raises TQ004 and takes
-- nothing back.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(10);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.sweep_jobs('')$$, 'TQ004', null, 'an empty sweeper');
select throws_ok($$select ticketiq.sweep_jobs(null)$$, 'TQ004', null, 'a null sweeper');
select throws_ok($$select ticketiq.sweep_jobs('leader', 0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select ticketiq.sweep_jobs('leader', null)$$, 'TQ004', null, 'a null limit');
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the rejected sweeps changed nothing'
);
select is((select count(s.job_id) from ticketiq.sweep_jobs('leader') as s), 1::bigint, 'a good sweep still takes it');

select * from finish();
rollback;
