-- audit_inspector_call: TQ004 for a bad actor, tool, digest, key, outcome or
-- detail, TQ001 for an unknown run; nothing is written.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.audit_inspector_call('', null, 't', repeat('a', 64), 'k', 'made')$$,
    'TQ004', null, 'an empty actor'
);
select throws_ok(
    $$select ticketiq.audit_inspector_call('a', null, null, repeat('a', 64), 'k', 'made')$$,
    'TQ004', null, 'no tool'
);
select throws_ok(
    $$select ticketiq.audit_inspector_call('a', null, 't', 'abc', 'k', 'made')$$,
    'TQ004', 'arguments_digest must be 64 lower-case hex digits', 'a digest that is no sha256'
);
select throws_ok(
    $$select ticketiq.audit_inspector_call('a', null, 't', repeat('A', 64), 'k', 'made')$$,
    'TQ004', null, 'an upper-case digest'
);
select throws_ok(
    $$select ticketiq.audit_inspector_call('a', null, 't', repeat('a', 64), repeat('k', 257), 'made')$$,
    'TQ004', null, 'a key of 257 characters'
);
select throws_ok(
    $$select ticketiq.audit_inspector_call('a', null, 't', repeat('a', 64), 'k', 'done')$$,
    'TQ004', 'unknown inspector outcome done', 'an unknown outcome'
);
select throws_ok(
    $$select ticketiq.audit_inspector_call('a', null, 't', repeat('a', 64), 'k', 'made', '[]')$$,
    'TQ004', 'detail must be a JSON object', 'a detail that is not an object'
);
select throws_ok(
    $$select ticketiq.audit_inspector_call('a', tiq_test.rid(9), 't', repeat('a', 64), 'k', 'made')$$,
    'TQ001', null, 'an unknown run'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
