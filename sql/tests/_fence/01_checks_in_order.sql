-- _fence (kind run): locks the run for a fenced write and raises, in this order,
-- TQ001 unknown run, TQ002 stale epoch, TQ006 not running, TQ003 lapsed;
-- otherwise returns the run.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.release_run(tiq_test.rid(2), 1);

select is(
    ((ticketiq._fence('run', tiq_test.rid(1), 1, ticketiq.now())).run).lease_holder, 'p1',
    'the holder at the current epoch passes and gets the run'
);
select throws_ok(
    $$select ticketiq._fence('run', tiq_test.rid(99), 1, ticketiq.now())$$, 'TQ001', null, 'unknown run'
);
select throws_ok(
    $$select ticketiq._fence('run', tiq_test.rid(1), 2, ticketiq.now())$$, 'TQ002', null, 'a later epoch is stale too'
);
select throws_ok(
    $$select ticketiq._fence('run', tiq_test.rid(1), null, ticketiq.now())$$, 'TQ002', null, 'a null epoch'
);
select throws_ok(
    $$select ticketiq._fence('run', tiq_test.rid(2), 1, ticketiq.now())$$, 'TQ002', null,
    'a released run at the old epoch: stale epoch first'
);
select throws_ok(
    $$select ticketiq._fence('run', tiq_test.rid(2), 2, ticketiq.now())$$, 'TQ006', null,
    'at its new epoch: not running'
);
select lives_ok(
    $$select ticketiq._fence('run', tiq_test.rid(1), 1, '2030-01-01 00:00:07.999999+00')$$,
    'a microsecond before expiry: held'
);
select throws_ok(
    $$select ticketiq._fence('run', tiq_test.rid(1), 1, '2030-01-01 00:00:08+00')$$, 'TQ003', null,
    'at the expiry instant: lapsed'
);
select throws_ok(
    $$select ticketiq._fence('run', tiq_test.rid(2), 1, '2030-01-01 00:01:00+00')$$, 'TQ002', null,
    'stale epoch is reported before a lapse'
);

select * from finish();
rollback;
