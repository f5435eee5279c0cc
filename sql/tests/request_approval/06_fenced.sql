-- request_approval: fenced like every attempt's write (I1): unknown run
-- TQ001, lapsed lease TQ003, stale epoch TQ002, a run not running TQ006;
-- nothing is filed.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));

select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(99), 1, 1, 'w1')$$,
    'TQ001', null, 'unknown run'
);

-- run 1's lease lapses; no sweep yet.
select tiq_test.advance(9);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1')$$,
    'TQ003', null, 'lapsed lease, before any sweep'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing filed');

select ticketiq.sweep_lapsed('leader');
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1')$$,
    'TQ002', null, 'claimed by the sweep: the old epoch is fenced'
);
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 2, 1, 'w1')$$,
    'TQ006', null, 'at the claim''s epoch the run is not running'
);
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1')$$,
    'TQ002', null, 'adopted at epoch 3: the stalled attempt is fenced'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing filed');

select * from finish();
rollback;
