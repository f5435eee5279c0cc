-- watch_processes: a dead process is reaped once.  A second watcher (or a
-- second call) finds it ended: no second audit, and its run is claimed once
-- (the epoch moves once: I2, I3).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.watch_session('w');
select tiq_test.dead_process('p1');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1}');
select ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1}');
select tiq_test.advance(1);
select ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1}');

select is_empty(
    $$select 1 from ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1}') as w
      where w.process_id = 'p1'$$,
    'an ended process whose runs are claimed is not reported again'
);
select is(tiq_test.epoch(tiq_test.rid(1)), 2::bigint, 'the epoch moved once');
select results_eq(
    $$select a.event, count(*) from ticketiq.audit as a
      where a.event in ('process.session_ended', 'agent.run.lease_lapsed') group by a.event order by 1$$,
    $$values ('agent.run.lease_lapsed'::text, 1::bigint), ('process.session_ended', 1)$$,
    'one process.session_ended and one lease_lapsed row'
);

select pg_advisory_unlock_all();
select * from finish();
rollback;
