-- audit_inspector_call: ticketiq_app may execute it; ticketiq_operator and PUBLIC may not.
begin;
select plan(3);

create function tiq_test.inspector_fn() returns text language sql
as $$select 'ticketiq.audit_inspector_call(text, uuid, text, text, text, text, jsonb)'$$;

select ok(
    has_function_privilege('ticketiq_app', tiq_test.inspector_fn(), 'execute'),
    'ticketiq_app may audit an inspector call'
);
select ok(
    not has_function_privilege('public', tiq_test.inspector_fn(), 'execute'),
    'PUBLIC may not'
);
select ok(
    not has_function_privilege('ticketiq_operator', tiq_test.inspector_fn(), 'execute'),
    'ticketiq_operator may not'
);

select * from finish();
rollback;
