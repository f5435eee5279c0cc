-- renew_leases (kind job): arrays of other lengths, null elements, an empty
-- holder or a TTL that is not positive raise TQ004 and change nothing.
begin;
select plan(11);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(1);
select tiq_test.save_fingerprint();

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select throws_ok(
    $$select ticketiq.renew_leases('p1', array[pg_temp.job('j1')], array[1, 1]::bigint[], 8, 'job')$$,
    'TQ004', null, 'more epochs than jobs'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[pg_temp.job('j1'), tiq_test.rid(2)], array[1]::bigint[], 8, 'job')$$,
    'TQ004', null, 'more jobs than epochs'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[pg_temp.job('j1'), null], array[1, 1]::bigint[], 8, 'job')$$,
    'TQ004', null, 'a null job id'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[pg_temp.job('j1')], array[null]::bigint[], 8, 'job')$$,
    'TQ004', null, 'a null epoch'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', null, array[1]::bigint[], 8, 'job')$$,
    'TQ004', null, 'null job ids'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[pg_temp.job('j1')], null, 8, 'job')$$,
    'TQ004', null, 'null epochs'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[pg_temp.job('j1')], array[1]::bigint[], 0, 'job')$$,
    'TQ004', null, 'ttl 0'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[pg_temp.job('j1')], array[1]::bigint[], 'Infinity', 'job')$$,
    'TQ004', null, 'ttl infinite'
);
select throws_ok(
    $$select ticketiq.renew_leases('', array[pg_temp.job('j1')], array[1]::bigint[], 8, 'job')$$,
    'TQ004', null, 'an empty holder'
);
select throws_ok(
    $$select ticketiq.renew_leases(null, array[pg_temp.job('j1')], array[1]::bigint[], 8, 'job')$$,
    'TQ004', null, 'a null holder'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the rejected renewals changed nothing'
);

select * from finish();
rollback;
