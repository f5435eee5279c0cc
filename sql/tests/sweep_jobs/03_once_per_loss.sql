-- sweep_jobs: a loss is taken back once: a second sweep finds nothing, the
-- lost worker's renewal is refused, and a job lost again counts again.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(9);

select is(
    (select count(s.job_id) from ticketiq.sweep_jobs('leader-a') as s), 1::bigint, 'the first sweep takes it back'
);
select is_empty($$select 1 from ticketiq.sweep_jobs('leader-b')$$, 'a second sweep finds nothing');
select is(
    (
        select r.held
        from ticketiq.jobs as j
        cross join lateral ticketiq.renew_leases('p1', array[j.job_id], array[1]::bigint[], 8, 'job') as r
    ),
    false,
    'the lost worker''s renewal is refused'
);

select ticketiq.claim_job('p2', 8);
select tiq_test.advance(9);
select results_eq(
    $$select s.epoch, s.attempts, s.state, s.lapsed_holder from ticketiq.sweep_jobs('leader-a') as s$$,
    $$values (4::bigint, 2, 'queued'::text, 'p2'::text)$$,
    'lost again by p2: epoch 4, two attempts lost, queued again'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'job.requeued'), 2::bigint,
    'one job.requeued row per loss'
);

select * from finish();
rollback;
