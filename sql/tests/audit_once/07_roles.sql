-- audit_once: ticketiq_app may execute it (and still not read the audit or
-- its keys); ticketiq_operator and PUBLIC may not execute it.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));

select ok(
    has_function_privilege('ticketiq_app', 'ticketiq.audit_once(uuid, bigint, text, text, jsonb)', 'execute'),
    'ticketiq_app may audit once'
);
select ok(
    not has_function_privilege('public', 'ticketiq.audit_once(uuid, bigint, text, text, jsonb)', 'execute'),
    'PUBLIC may not'
);
set local role ticketiq_app;
select is(
    (
        select o.inserted
        from ticketiq.audit_once(
            '00000000-0000-0000-0000-000000000001', 1, 'agent.run.guarantee_downgraded', 'w1', '{}'
        ) as o
    ),
    true,
    'as ticketiq_app the row is written'
);
select throws_ok($$select * from ticketiq.audit_once_keys$$, '42501', null, 'the keys stay closed to it');
select throws_ok(
    $$delete from ticketiq.audit_once_keys$$, '42501', null, 'it cannot free a key'
);
reset role;
set local role ticketiq_operator;
select throws_ok(
    $$select ticketiq.audit_once('00000000-0000-0000-0000-000000000001', 1, 'agent.run.x', 'w2', '{}')$$,
    '42501', null, 'ticketiq_operator may not'
);
reset role;

select * from finish();
rollback;
