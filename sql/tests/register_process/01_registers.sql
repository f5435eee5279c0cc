-- register_process: an app process records itself with its session's
-- backend pid; registering again refreshes it and keeps started_at.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

select results_eq(
    $$select r.process_id, r.backend_pid, r.started_at from ticketiq.register_process('p1', 'host-a', 100) as r$$,
    $$values ('p1'::text, pg_backend_pid(), '2030-01-01 00:00:00+00'::timestamptz)$$,
    'returns the process with this session''s backend pid'
);
select results_eq(
    $$select p.host, p.os_pid, p.backend_pid, p.last_seen_at, p.stopped_at
      from ticketiq.processes as p where p.process_id = 'p1'$$,
    $$values ('host-a'::text, 100, pg_backend_pid(), '2030-01-01 00:00:00+00'::timestamptz, null::timestamptz)$$,
    'the process row is written'
);

update ticketiq.processes set stopped_at = '2030-01-01 00:00:05+00' where process_id = 'p1';
select tiq_test.advance(10);
select is(
    (select r.started_at from ticketiq.register_process('p1', 'host-b', 200) as r),
    '2030-01-01 00:00:00+00'::timestamptz,
    'registering again keeps started_at'
);
select results_eq(
    $$select p.host, p.os_pid, p.last_seen_at, p.stopped_at from ticketiq.processes as p where p.process_id = 'p1'$$,
    $$values ('host-b'::text, 200, '2030-01-01 00:00:10+00'::timestamptz, null::timestamptz)$$,
    'and refreshes host, os pid and last_seen_at, clearing stopped_at'
);
select is((select count(*) from ticketiq.processes), 1::bigint, 'still one row');

select * from finish();
rollback;
