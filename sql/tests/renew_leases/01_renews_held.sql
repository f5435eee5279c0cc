-- renew_leases: every listed lease the holder still holds, unlapsed, is
-- renewed to TTL from now in one statement; the process is recorded as seen.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.register_process('p1', 'host-a', 4242);
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.advance(5);

select results_eq(
    $$select r.lease_id, r.epoch::bigint, r.held, r.lease_expires_at
      from ticketiq.renew_leases('p1', array[tiq_test.rid(1), tiq_test.rid(2)], array[1, 1]::bigint[], 8, 'run') as r
      order by r.lease_id$$,
    $$values (tiq_test.rid(1), 1::bigint, true, '2030-01-01 00:00:13+00'::timestamptz),
             (tiq_test.rid(2), 1::bigint, true, '2030-01-01 00:00:13+00'::timestamptz)$$,
    'both leases held and renewed to now + TTL'
);
select is(
    (select r.lease_expires_at from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    '2030-01-01 00:00:13+00'::timestamptz,
    'the new expiry is stored'
);
select is(
    (select p.last_seen_at from ticketiq.processes as p where p.process_id = 'p1'),
    '2030-01-01 00:00:05+00'::timestamptz,
    'the process is recorded as seen'
);
select is(
    (select r.epoch::bigint from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 1::bigint,
    'renewal does not change the epoch'
);
select is_empty(
    $$select 1 from ticketiq.renew_leases('p1', array[]::uuid[], array[]::bigint[], 8, 'run')$$,
    'an empty list returns no rows'
);

select * from finish();
rollback;
