-- hold_liveness: takes a session-level advisory lock (29809, key) on the
-- calling session and records the key and backend pid on the process row;
-- holding again takes a fresh key; the lock outlives the transaction.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.register_process('p1', 'host-a', 100);
create temp table held on commit drop as select h.* from ticketiq.hold_liveness('p1') as h;

select results_eq(
    $$select h.process_id, h.backend_pid, h.was_reaped from held as h$$,
    $$values ('p1'::text, pg_backend_pid(), false)$$,
    'returns the process, this session''s backend pid, not reaped'
);
select results_eq(
    $$select p.liveness_key, p.liveness_backend_pid, p.liveness_since, p.stopped_at
      from ticketiq.processes as p where p.process_id = 'p1'$$,
    $$select h.liveness_key, pg_backend_pid(), '2030-01-01 00:00:00+00'::timestamptz, null::timestamptz
      from held as h$$,
    'the row records the key, the session and when'
);
select is(
    (select count(*) from pg_locks as l, held as h
     where l.locktype = 'advisory' and l.classid = 29809 and l.objid = h.liveness_key::text::oid
         and l.objsubid = 2 and l.pid = pg_backend_pid() and l.granted),
    1::bigint,
    'this session holds the advisory lock (29809, key)'
);
select is(
    (select l.mode from pg_locks as l, held as h
     where l.locktype = 'advisory' and l.classid = 29809 and l.objid = h.liveness_key::text::oid
         and l.pid = pg_backend_pid()),
    'ExclusiveLock',
    'an exclusive lock: no other session can hold the same token'
);
select isnt(
    (select h.liveness_key from ticketiq.hold_liveness('p1') as h),
    (select h.liveness_key from held as h),
    'holding again takes a fresh key'
);
select is(
    (select p.liveness_key from ticketiq.processes as p where p.process_id = 'p1'),
    (select max(l.objid::text::integer) from pg_locks as l
     where l.locktype = 'advisory' and l.classid = 29809 and l.pid = pg_backend_pid()),
    'the row names the newest key'
);

select pg_advisory_unlock_all();
select * from finish();
rollback;
