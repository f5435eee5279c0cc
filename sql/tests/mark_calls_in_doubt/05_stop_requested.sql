-- mark_calls_in_doubt: once a Stop was asked, every row says so: the
-- caller makes none of the calls.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(
    tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write')));
select ticketiq.request_stop(tiq_test.rid(1), 'ops');

select results_eq(
    $$select m.call_id, m.stop_requested
      from ticketiq.mark_calls_in_doubt(tiq_test.rid(1), 1, 1,
          '[{"call_id": "w1"}, {"call_id": "w2"}]') as m$$,
    $$values ('w1'::text, true), ('w2', true)$$,
    'stop_requested on every row'
);

select * from finish();
rollback;
