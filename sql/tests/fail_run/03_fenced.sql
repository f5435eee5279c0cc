-- fail_run: fenced (I1): unknown TQ001, stale TQ002, lapsed TQ003, already
-- finished TQ006.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select ticketiq.fail_run(tiq_test.rid(2), 1, 'first');

select throws_ok($$select ticketiq.fail_run(tiq_test.rid(99), 1, 'why')$$, 'TQ001', null, 'unknown run');
select throws_ok($$select ticketiq.fail_run(tiq_test.rid(2), 1, 'again')$$, 'TQ006', null, 'already failed');
select tiq_test.advance(8);
select throws_ok($$select ticketiq.fail_run(tiq_test.rid(1), 1, 'why')$$, 'TQ003', null, 'lapsed lease');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select throws_ok($$select ticketiq.fail_run(tiq_test.rid(1), 1, 'why')$$, 'TQ002', null, 'stale epoch');
select is(
    (select r.status from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'running',
    'the adopter''s run is still running'
);

select * from finish();
rollback;
