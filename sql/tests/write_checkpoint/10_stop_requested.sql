-- write_checkpoint: stop_requested tells the loop a Stop was asked
-- (ticketiq.request_stop), so it stops before making any call.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select is(
    (select w.stop_requested from ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1, tiq_test.body(), 's1', 'k1') as w),
    false,
    'no stop asked: stop_requested is false'
);
select ticketiq.request_stop(tiq_test.rid(1), 'alice@example.com', 'wrong ticket');
select is(
    (select w.stop_requested from ticketiq.write_checkpoint(tiq_test.rid(1), 1, 2, tiq_test.body(), 's2', 'k1') as w),
    true,
    'after request_stop: stop_requested is true'
);
select is(
    (select w.stop_requested from ticketiq.write_checkpoint(tiq_test.rid(1), 1, 2, tiq_test.body(), 's2', 'k1') as w),
    true,
    'a replay reports it as well'
);

select * from finish();
rollback;
