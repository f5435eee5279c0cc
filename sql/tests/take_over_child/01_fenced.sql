-- take_over_child: fenced by the parent's own epoch: the parent attempt
-- must still own the parent run (unknown parent TQ001, stale epoch TQ002,
-- lapsed lease TQ003, parent not running TQ006); a refused take-over leaves
-- the lapsed child untouched.  The attempt that owns the parent now takes
-- the child over.
begin;
select plan(10);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 4, tiq_test.rid(2));

-- the child's lease lapsed; the parent's has not.
select tiq_test.advance(5);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(99), 1, tiq_test.rid(2), 'p1', 30)$$,
    'TQ001', null, 'unknown parent'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 7, tiq_test.rid(2), 'p1', 30)$$,
    'TQ002', null, 'an epoch the parent run is not at'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the child is untouched');

-- the parent's lease lapses too; no sweep yet.
select tiq_test.advance(4);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30)$$,
    'TQ003', null, 'the parent''s lease lapsed'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the child is untouched');

-- the sweep claims both; p2 adopts the parent at epoch 3.
select ticketiq.sweep_lapsed('leader');
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 2, tiq_test.rid(2), 'p1', 30)$$,
    'TQ006', null, 'the parent is claimed, not running'
);
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30)$$,
    'TQ002', null, 'the stalled parent attempt (epoch 1) is fenced'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the claimed child is not adopted');
select results_eq(
    $$select t.run_id, t.epoch, t.lease_expires_at
      from ticketiq.take_over_child(tiq_test.rid(1), 3, tiq_test.rid(2), 'p2', 30) as t$$,
    $$values (tiq_test.rid(2), 3::bigint, '2030-01-01 00:00:39+00'::timestamptz)$$,
    'the parent''s owner (epoch 3) takes the child over'
);
select is(
    (select r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(2)), 'p2',
    'held by the parent''s owner'
);

select * from finish();
rollback;
