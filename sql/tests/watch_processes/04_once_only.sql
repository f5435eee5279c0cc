-- watch_processes: a dead process is reaped once.  A second watcher (or a
-- second call) finds it ended: no second claim, no second audit, and the
-- epoch moves once (I2, I3).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.dead_process('p1');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.watch_processes('w1', tiq_test.watch_session(), '{p1}');

select is_empty(
    $$select 1 from ticketiq.watch_processes('w2', tiq_test.watch_session(), '{p1}')$$,
    'an ended process is not reported again'
);
select is(tiq_test.epoch(tiq_test.rid(1)), 2::bigint, 'the epoch moved once');
select is(
    (select count(*) from ticketiq.audit as a
     where a.event in ('process.session_ended', 'agent.run.lease_lapsed')),
    2::bigint,
    'one process.session_ended and one lease_lapsed row'
);

select pg_advisory_unlock_all();
select * from finish();
rollback;
