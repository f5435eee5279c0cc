-- decide_approval: not fenced: a person decides whether or not the run's
-- process is alive: after its lease lapsed, once the sweep claimed it, and
-- once it is failed; no epoch or lease is asked for and the run is not
-- touched.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'), tiq_test.call('w3', 'write'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, c.id) from unnest(array['w1', 'w2', 'w3']) as c (id);

-- the lease lapses; no sweep yet.
select tiq_test.advance(9);
select is(
    (select d.state from ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'alice') as d),
    'approved',
    'decided after the lease lapsed'
);

-- the sweep claims the run; no process holds it.
select ticketiq.sweep_lapsed('leader');
select is(
    (select d.state from ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2'), false, 'alice') as d),
    'rejected',
    'decided while the run is claimed and held by no process'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 2::bigint, null::text)$$,
    'the run is not touched by the decision'
);

-- the run is adopted and failed.
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));
select ticketiq.fail_run(tiq_test.rid(1), 3, 'gave up');
select is(
    (select d.state from ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w3'), true, 'alice') as d),
    'approved',
    'decided after the run failed'
);
select is((select count(*) from ticketiq.approvals_waiting), 0::bigint, 'all three requests are decided');

select * from finish();
rollback;
