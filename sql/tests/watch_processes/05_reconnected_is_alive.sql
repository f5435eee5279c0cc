-- watch_processes: a process whose liveness connection dropped but which
-- held its token again on a new session (a fresh key) before the watcher
-- looked is alive: nothing is reaped.  Its own watcher entry is never
-- reaped either.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.dead_process('p1');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.hold_liveness('p1');
select tiq_test.dead_process('w');

select results_eq(
    $$select w.process_id, w.alive, w.runs_claimed
      from ticketiq.watch_processes('w', tiq_test.watch_session(), '{p1,w}') as w$$,
    $$values ('p1'::text, true, 0), ('w'::text, false, 0)$$,
    'p1 holds its new key: alive; the watcher does not reap itself'
);
select is(tiq_test.epoch(tiq_test.rid(1)), 1::bigint, 'p1 keeps its run');
select is(
    (select p.stopped_at from ticketiq.processes as p where p.process_id = 'w'), null::timestamptz,
    'the watcher''s own row is untouched'
);

select pg_advisory_unlock_all();
select * from finish();
rollback;
