-- sweep_lapsed: p_max_losses decides when a loss fails the run, and
-- p_limit caps the runs claimed per sweep, oldest expiry first.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 5, tiq_test.rid(1));
select tiq_test.new_run('p1', 6, tiq_test.rid(2));
select tiq_test.new_run('p1', 7, tiq_test.rid(3));
select tiq_test.advance(10);

select results_eq(
    $$select s.run_id, s.status from ticketiq.sweep_lapsed('leader-a', 2, 1) as s$$,
    $$values (tiq_test.rid(1), 'claimed'::text)$$,
    'limit 1 claims the run whose lease lapsed first'
);
select results_eq(
    $$select s.run_id, s.status, s.loss_count from ticketiq.sweep_lapsed('leader-a', 0, 1) as s$$,
    $$values (tiq_test.rid(2), 'failed'::text, 1)$$,
    'max_losses 0: the first loss fails the run'
);
select is(
    (select r.status from ticketiq.runs as r where r.run_id = tiq_test.rid(3)), 'running',
    'the run beyond the limit waits for the next sweep'
);
select matches(
    (select r.failure_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(2)),
    'lost 1 times',
    'its reason counts the loss'
);
select results_eq(
    $$select s.run_id, s.status from ticketiq.sweep_lapsed('leader-a') as s$$,
    $$values (tiq_test.rid(3), 'claimed'::text)$$,
    'the next sweep claims it'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'agent.run.lease_lapsed'), 3::bigint,
    'three lapses audited in all'
);

select * from finish();
rollback;
