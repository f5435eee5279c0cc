-- restart_run: a stopped run goes on without its Stop; a run failed for its
-- losses starts counting them from none.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.request_stop(tiq_test.rid(1), 'bob');
select ticketiq.stop_run(tiq_test.rid(1), 1);
select ticketiq.restart_run(tiq_test.rid(1), 'alice');
select results_eq(
    $$select r.status::text, r.stop_requested_at, r.stop_requested_by from ticketiq.runs as r
      where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, null::timestamptz, null::text)$$,
    'a stopped run is claimed without its Stop'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.take_over(tiq_test.rid(2), 'p2');
select tiq_test.take_over(tiq_test.rid(2), 'p3');
select tiq_test.lose(tiq_test.rid(2));
select is((select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(2)), 'failed',
    'lost three times: failed');
select is(
    (select r.losses_reset from ticketiq.restart_run(tiq_test.rid(2), 'alice', 'the host is fixed') as r), 3,
    'restarted: three losses reset'
);
select is((select r.loss_count::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(2)), 0,
    'counted from none again');

select * from finish();
rollback;
