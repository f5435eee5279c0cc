-- stop_run: fenced (I1): unknown TQ001, stale TQ002, lapsed TQ003,
-- finished TQ006.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select ticketiq.stop_run(tiq_test.rid(2), 1);

select throws_ok($$select ticketiq.stop_run(tiq_test.rid(99), 1)$$, 'TQ001', null, 'unknown run');
select throws_ok($$select ticketiq.stop_run(tiq_test.rid(2), 1)$$, 'TQ006', null, 'stopped twice');
select tiq_test.advance(9);
select tiq_test.save_fingerprint();
select throws_ok($$select ticketiq.stop_run(tiq_test.rid(1), 1)$$, 'TQ003', null, 'lapsed lease');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select throws_ok($$select ticketiq.stop_run(tiq_test.rid(1), 1)$$, 'TQ002', null, 'stale epoch');

select * from finish();
rollback;
