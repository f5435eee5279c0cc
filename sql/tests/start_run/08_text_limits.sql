-- start_run: a holder, identity, entry point or correlation id over 512
-- characters, an idempotency key over 600 or a TTL over 1e9 seconds raises
-- TQ004 naming the argument and writes nothing; at the limits the run starts.
begin;
select plan(10);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.start_run(repeat('h', 3000), 'o', 'ra', 'web', 'ep', false, 8)$$,
    'TQ004', 'holder must be 1 to 512 characters, got 3000', 'a holder of 3,000 characters'
);
select throws_ok(
    $$select ticketiq.start_run('p1', repeat('o', 513), 'ra', 'web', 'ep', false, 8)$$,
    'TQ004', 'owner must be 1 to 512 characters, got 513', 'an owner of 513 characters'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', repeat('r', 513), 'web', 'ep', false, 8)$$,
    'TQ004', 'run_as must be 1 to 512 characters, got 513', 'a run_as of 513 characters'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', repeat('c', 513), 'ep', false, 8)$$,
    'TQ004', 'channel must be 1 to 512 characters, got 513', 'a channel of 513 characters'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', repeat('e', 513), false, 8)$$,
    'TQ004', 'entry_point must be 1 to 512 characters, got 513', 'an entry point of 513 characters'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, '{}', repeat('c', 513))$$,
    'TQ004', 'correlation_id must be 1 to 512 characters, got 513', 'a correlation id of 513 characters'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, repeat('k', 3000))$$,
    'TQ004', 'idempotency_key must be 1 to 600 characters, got 3000', 'an idempotency key of 3,000 characters'
);
select throws_ok(
    $$select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 1e13)$$,
    'TQ004', 'ttl must be a positive number of seconds up to 1000000000, got 10000000000000',
    'a TTL of 1e13 seconds'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select is(
    (
        select s.created
        from ticketiq.start_run(
            repeat(U&'\+01F600', 512), repeat('o', 512), repeat('r', 512), repeat('c', 512),
            repeat('e', 512), false, 1e9, '{}', repeat('c', 512), repeat(U&'\+01F600', 600)
        ) as s
    ),
    true,
    'at the limits (four-byte characters in the indexed ones) the run starts'
);

select * from finish();
rollback;
