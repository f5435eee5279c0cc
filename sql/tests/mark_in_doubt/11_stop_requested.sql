-- mark_in_doubt: stop_requested tells the caller a Stop was asked, so it
-- does not make the call.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select is(
    (select m.stop_requested from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1') as m), false,
    'no stop: false'
);
select ticketiq.request_stop(tiq_test.rid(1), 'alice@example.com');
select is(
    (select m.stop_requested from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2') as m), true,
    'after request_stop: true'
);

select * from finish();
rollback;
