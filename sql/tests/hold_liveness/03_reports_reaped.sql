-- hold_liveness: a process whose previous session a watcher found ended
-- learns it (was_reaped) when it holds its token again, and is up again.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.dead_process('p1');
select ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1}');

select is(
    (select h.was_reaped from ticketiq.hold_liveness('p1') as h), true,
    'was_reaped: its runs were taken over while it was away'
);
select results_eq(
    $$select p.stopped_at, p.ended_reason from ticketiq.processes as p where p.process_id = 'p1'$$,
    $$values (null::timestamptz, null::text)$$,
    'and it is up again'
);

select pg_advisory_unlock_all();
select * from finish();
rollback;
