-- renew_leases (kind job): every listed job the holder still runs, unlapsed, is
-- renewed to TTL from now, in one statement.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select tiq_test.advance(1);
select ticketiq.enqueue_job('fine_tune', '{}', true, 'j2');
select ticketiq.claim_job('p1', 8);
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(5);

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select set_eq(
    $$select r.lease_id, r.epoch, r.held, r.lease_expires_at
      from ticketiq.renew_leases(
          'p1', array[pg_temp.job('j1'), pg_temp.job('j2')], array[1, 1]::bigint[], 8, 'job'
      ) as r$$,
    $$values (pg_temp.job('j1'), 1::bigint, true, '2030-01-01 00:00:14+00'::timestamptz),
             (pg_temp.job('j2'), 1::bigint, true, '2030-01-01 00:00:14+00'::timestamptz)$$,
    'both leases held and renewed to now + TTL'
);
select is(
    (select j.lease_expires_at from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')),
    '2030-01-01 00:00:14+00'::timestamptz,
    'the new expiry is stored'
);
select is(
    (select j.epoch from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')), 1::bigint,
    'renewal does not change the epoch'
);
select is_empty(
    $$select 1 from ticketiq.renew_leases('p1', array[]::uuid[], array[]::bigint[], 8, 'job')$$,
    'an empty list returns no rows'
);

select * from finish();
rollback;
