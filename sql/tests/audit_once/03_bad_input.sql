-- audit_once: TQ004 for an event that is not an agent.run.* name (as
-- fail_run checks it), an empty, null or over-long key (over 256
-- characters), or a detail that is not a JSON object; nothing is written
-- and the key stays free.
begin;
select plan(13);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'run.downgraded', 'w1', '{}')$$,
    'TQ004', 'event must be an agent.run.* name, got run.downgraded', 'not an agent.run.* event'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.', 'w1', '{}')$$,
    'TQ004', null, 'an event with no name'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.Downgraded!', 'w1', '{}')$$,
    'TQ004', null, 'an event name that is not lower-case words'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, null, 'w1', '{}')$$,
    'TQ004', 'event must be an agent.run.* name, got null', 'a null event'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.downgraded', '', '{}')$$,
    'TQ004', 'key must be 1 to 256 characters, got 0', 'an empty key'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.downgraded', null, '{}')$$,
    'TQ004', 'key must be 1 to 256 characters, got null', 'a null key'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.downgraded', repeat('k', 257), '{}')$$,
    'TQ004', 'key must be 1 to 256 characters, got 257', 'a key of 257 characters'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.downgraded', 'w1', '[]')$$,
    'TQ004', 'detail must be a JSON object', 'a detail that is an array'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.downgraded', 'w1', '"text"')$$,
    'TQ004', 'detail must be a JSON object', 'a detail that is a string'
);
select throws_ok(
    $$select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.downgraded', 'w1', null)$$,
    'TQ004', 'detail must be a JSON object', 'a null detail'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select is(
    (select o.inserted from ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.downgraded', 'w1', '{}') as o),
    true,
    'the key was not taken by a refused call'
);
select is(
    (
        select o.inserted
        from ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.downgraded', repeat('k', 256), '{}') as o
    ),
    true,
    'a key of 256 characters is audited'
);

select * from finish();
rollback;
