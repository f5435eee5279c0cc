-- renew_leases: arrays of other lengths, null elements, an empty holder or
-- a TTL that is not positive raise TQ004 and change nothing.
begin;
select plan(11);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.register_process('p1');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.advance(1);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1)], array[1, 1]::bigint[], 8, 'run')$$,
    'TQ004', null, 'more epochs than runs'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1), tiq_test.rid(2)], array[1]::bigint[], 8, 'run')$$,
    'TQ004', null, 'more runs than epochs'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1), null], array[1, 1]::bigint[], 8, 'run')$$,
    'TQ004', null, 'a null run id'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1)], array[null]::bigint[], 8, 'run')$$,
    'TQ004', null, 'a null epoch'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', null, array[1]::bigint[], 8, 'run')$$,
    'TQ004', null, 'null run ids'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1)], null, 8, 'run')$$,
    'TQ004', null, 'null epochs'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1)], array[1]::bigint[], 0, 'run')$$,
    'TQ004', null, 'ttl 0'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1)], array[1]::bigint[], -1, 'run')$$,
    'TQ004', null, 'ttl negative'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1)], array[1]::bigint[], 'NaN', 'run')$$,
    'TQ004', null, 'ttl NaN'
);
select throws_ok(
    $$select ticketiq.renew_leases('', array[tiq_test.rid(1)], array[1]::bigint[], 8, 'run')$$,
    'TQ004', null, 'empty holder'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'no lease renewed and the process not marked seen (I15)'
);

select * from finish();
rollback;
