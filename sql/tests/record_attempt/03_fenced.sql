-- record_attempt: fenced like every attempt's write (I1, ticketiq._fence):
-- unknown run TQ001, lapsed lease TQ003, stale epoch TQ002, a run not
-- running TQ006; nothing is counted.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', 'HTTP 503');
select ticketiq.fail_run(tiq_test.rid(2), 1, 'gave up');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(99), 1, 1, 'model', 'HTTP 503')$$,
    'TQ001', null, 'unknown run'
);
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(2), 1, 1, 'model', 'HTTP 503')$$,
    'TQ006', null, 'a failed run'
);
-- run 1's lease lapses; no sweep yet.
select tiq_test.advance(9);
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', 'HTTP 503')$$,
    'TQ003', null, 'lapsed lease, before any sweep'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing counted');

-- the sweep claims run 1 (epoch 2), then it is adopted (epoch 3).
select ticketiq.sweep_lapsed('leader');
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 2, 1, 'model', 'HTTP 503')$$,
    'TQ006', null, 'at the claim''s epoch the run is not running'
);
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', 'HTTP 503')$$,
    'TQ002', null, 'the stalled attempt is fenced'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing counted');
select is(
    (select a.attempts from ticketiq.attempts as a where a.run_id = tiq_test.rid(1)), 1,
    'the count is still the one failure recorded before'
);

select * from finish();
rollback;
