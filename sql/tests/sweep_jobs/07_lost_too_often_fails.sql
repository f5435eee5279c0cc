-- sweep_jobs: a resumable job lost more than max_losses times is failed
-- with the reason and audited, not queued forever.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(9);
select ticketiq.sweep_jobs('leader', 1000, 1);
select ticketiq.claim_job('p2', 8);
select tiq_test.advance(9);

select results_eq(
    $$select s.attempts, s.state from ticketiq.sweep_jobs('leader', 1000, 1) as s$$,
    $$values (2, 'failed'::text)$$,
    'lost a second time with max_losses 1: failed'
);
select matches(
    (select j.failure_reason from ticketiq.jobs as j), '^lost 2 times \(more than 1\)',
    'the reason says how often it was lost'
);
select is_empty($$select 1 from ticketiq.claim_job('p3', 8)$$, 'it is never claimed again');
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'job.interrupted'), 1::bigint,
    'the failure is audited'
);

select * from finish();
rollback;
