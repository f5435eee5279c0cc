-- audit_once: fenced like every attempt's write (I1, ticketiq._fence):
-- unknown run TQ001, lapsed lease TQ003, stale epoch TQ002, a run not
-- running TQ006; nothing is written, not even for a key already audited.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w1', '{}');
select ticketiq.fail_run(tiq_test.rid(2), 1, 'gave up');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(99), 1, 'agent.run.guarantee_downgraded', 'w1', '{}')$$,
    'TQ001', null, 'unknown run'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(2), 1, 'agent.run.guarantee_downgraded', 'w1', '{}')$$,
    'TQ006', null, 'a failed run'
);
-- run 1's lease lapses; no sweep yet.
select tiq_test.advance(9);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w2', '{}')$$,
    'TQ003', null, 'lapsed lease, before any sweep'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w1', '{}')$$,
    'TQ003', null, 'also for a key already audited'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

-- the sweep claims run 1 (epoch 2), then it is adopted (epoch 3).
select ticketiq.sweep_lapsed('leader');
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 2, 'agent.run.guarantee_downgraded', 'w2', '{}')$$,
    'TQ006', null, 'at the claim''s epoch the run is not running'
);
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w2', '{}')$$,
    'TQ002', null, 'the stalled attempt is fenced'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select is(
    (select count(*)::integer from ticketiq.audit_once_keys as k where k.run_id = tiq_test.rid(1)), 1,
    'only the key audited before the fence is kept'
);

select * from finish();
rollback;
