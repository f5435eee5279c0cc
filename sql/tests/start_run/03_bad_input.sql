-- start_run: bad input raises TQ004 invalid_payload and writes nothing (I15).
begin;
select plan(19);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.start_run('p1', '', 'ra', 'web', 'ep', false, 8)$$,
    'TQ004', null, 'empty owner'
);
select throws_ok(
    $$select ticketiq.start_run('p1', null, 'ra', 'web', 'ep', false, 8)$$,
    'TQ004', null, 'null owner'
);
select throws_ok(
    $$select ticketiq.start_run('', 'o', 'ra', 'web', 'ep', false, 8)$$,
    'TQ004', null, 'empty holder'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', '', 'web', 'ep', false, 8)$$,
    'TQ004', null, 'empty run_as'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', '', 'ep', false, 8)$$,
    'TQ004', null, 'empty channel'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', '', false, 8)$$,
    'TQ004', null, 'empty entry point'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 0)$$,
    'TQ004', null, 'ttl 0'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, -8)$$,
    'TQ004', null, 'ttl negative'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 'NaN')$$,
    'TQ004', null, 'ttl NaN'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 'Infinity')$$,
    'TQ004', null, 'ttl Infinity'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, null)$$,
    'TQ004', null, 'ttl null'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, null, '[]')$$,
    'TQ004', null, 'meta an array, not an object'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, null, '"x"')$$,
    'TQ004', null, 'meta a string, not an object'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, null, null)$$,
    'TQ004', null, 'meta null'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', null, 8)$$,
    'TQ004', null, 'may_wait null'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, null)$$,
    'TQ004', null, 'input null'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, '')$$,
    'TQ004', null, 'empty idempotency key'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, '{}', '')$$,
    'TQ004', null, 'empty correlation id'
);

select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'no row written by any rejected start (I15)');

select * from finish();
rollback;
