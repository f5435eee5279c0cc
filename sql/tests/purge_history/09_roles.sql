-- purge_history: ticketiq_app may execute it; ticketiq_operator (read-only)
-- and PUBLIC may not.
begin;
select plan(3);

select ok(
    has_function_privilege('ticketiq_app', 'ticketiq.purge_history(double precision, integer)', 'execute'),
    'ticketiq_app may purge history'
);
select ok(
    not has_function_privilege('public', 'ticketiq.purge_history(double precision, integer)', 'execute'),
    'PUBLIC may not'
);
set local role ticketiq_operator;
select throws_ok(
    $$select ticketiq.purge_history(86400)$$, '42501', null, 'ticketiq_operator may not'
);
reset role;

select * from finish();
rollback;
