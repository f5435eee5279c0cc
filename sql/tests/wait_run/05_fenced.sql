-- wait_run: fenced like every write of an attempt (unknown run TQ001, a stale
-- epoch TQ002, a lapsed lease TQ003); nothing is written, no signal consumed.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{}', 's1');
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.wait_run(tiq_test.rid(9), 1, 'k', 'timer:x', 5)$$,
    'TQ001', null, 'an unknown run');
select throws_ok($$select ticketiq.wait_run(tiq_test.rid(1), 2, 'k', 'timer:x', 5)$$,
    'TQ002', null, 'a stale epoch');
select throws_ok(
    $$select ticketiq.wait_run(tiq_test.rid(1), 1, 'k', 'signal:' || tiq_test.rid(1) || ':ack')$$,
    'TQ003', null, 'a lapsed lease');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
