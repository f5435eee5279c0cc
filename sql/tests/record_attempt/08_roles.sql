-- record_attempt: ticketiq_app may execute it (and still not read
-- ticketiq.attempts); ticketiq_operator and PUBLIC may not execute it.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));

select ok(
    has_function_privilege('ticketiq_app', 'ticketiq.record_attempt(uuid, bigint, integer, text, text)', 'execute'),
    'ticketiq_app may record an attempt'
);
select ok(
    not has_function_privilege('public', 'ticketiq.record_attempt(uuid, bigint, integer, text, text)', 'execute'),
    'PUBLIC may not'
);
set local role ticketiq_app;
select is(
    (
        select a.attempts
        from ticketiq.record_attempt('00000000-0000-0000-0000-000000000001', 1, 1, 'model', 'HTTP 503') as a
    ),
    1,
    'as ticketiq_app the attempt is counted'
);
select throws_ok($$select * from ticketiq.attempts$$, '42501', null, 'but the table stays closed to it');
reset role;
set local role ticketiq_operator;
select throws_ok(
    $$select ticketiq.record_attempt('00000000-0000-0000-0000-000000000001', 1, 1, 'model', 'HTTP 503')$$,
    '42501', null,
    'ticketiq_operator may not'
);
reset role;

select * from finish();
rollback;
