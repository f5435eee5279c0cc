-- release_liveness: a clean stop marks the process stopped and releases
-- its lock; no watcher takes it for a death (no audit, nothing claimed).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.register_process('p1', 'h', 1);
select ticketiq.hold_liveness('p1');

select is(ticketiq.release_liveness('p1'), true, 'this session held the token');
select is(
    (select count(*) from pg_locks as l
     where l.locktype = 'advisory' and l.classid = 29809 and l.pid = pg_backend_pid()),
    0::bigint,
    'the lock is released'
);
select results_eq(
    $$select p.stopped_at, p.ended_reason from ticketiq.processes as p where p.process_id = 'p1'$$,
    $$values ('2030-01-01 00:00:00+00'::timestamptz, 'stopped'::text)$$,
    'the process is stopped'
);
select is_empty(
    $$select 1 from ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1}') as w
      where w.process_id = 'p1'$$,
    'a watcher that saw it alive does not reap it'
);

select * from finish();
rollback;
