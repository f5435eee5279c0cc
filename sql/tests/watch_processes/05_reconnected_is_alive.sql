-- watch_processes: a process whose liveness connection dropped but which
-- held its token again on a new session (a fresh key) before the watcher
-- looked is alive: nothing is reaped.  One that comes back within the grace
-- after it was found dead keeps its runs: it renews them before they lapse.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.watch_session('w');
select tiq_test.dead_process('p1');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.hold_liveness('p1');

select results_eq(
    $$select w.process_id, w.alive, w.runs_claimed
      from ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1,w}') as w$$,
    $$values ('p1'::text, true, 0), ('w', true, 0)$$,
    'p1 holds its new key: alive'
);
select is(tiq_test.epoch(tiq_test.rid(1)), 1::bigint, 'p1 keeps its run');

select tiq_test.dead_process('p2');
select tiq_test.new_run('p2', 8, tiq_test.rid(2));
select ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p2}', 2, 0.3);
select ticketiq.hold_liveness('p2');
select ticketiq.renew_leases('p2', array[tiq_test.rid(2)], array[1::bigint], 8, 'run');
select tiq_test.advance(1);
select ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p2}', 2, 0.3);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('running'::text, 1::bigint, 'p2'::text)$$,
    'p2, back within the grace, renewed and kept its run'
);
select is(
    (select p.stopped_at from ticketiq.processes as p where p.process_id = 'p2'), null::timestamptz,
    'and is up again'
);

select pg_advisory_unlock_all();
select * from finish();
rollback;
