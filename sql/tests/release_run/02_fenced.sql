-- release_run: fenced (I1): unknown TQ001, stale epoch TQ002, lapsed TQ003,
-- a run not running TQ006.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select ticketiq.release_run(tiq_test.rid(2), 1);

select throws_ok($$select ticketiq.release_run(tiq_test.rid(99), 1)$$, 'TQ001', null, 'unknown run');
select throws_ok($$select ticketiq.release_run(tiq_test.rid(2), 1)$$, 'TQ002', null, 'released twice: stale epoch');
select throws_ok(
    $$select ticketiq.release_run(tiq_test.rid(2), 2)$$, 'TQ006', null,
    'at the release''s epoch the run is claimed, not running'
);
select tiq_test.advance(8);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.release_run(tiq_test.rid(1), 1)$$, 'TQ003', null,
    'a lapsed lease cannot be released: the sweep claims it and counts the loss'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select s.loss_count from ticketiq.sweep_lapsed('leader') as s where s.run_id = tiq_test.rid(1)), 1,
    'the lapsed run is swept with its loss counted'
);

select * from finish();
rollback;
