-- run_trace_context and record_trace_context: ticketiq_app may call them; PUBLIC may not.
begin;
select plan(4);

select ok(has_function_privilege('ticketiq_app', 'ticketiq.run_trace_context(uuid)', 'execute'), 'app reads');
select ok(
    has_function_privilege('ticketiq_app', 'ticketiq.record_trace_context(text, text, text, text)', 'execute'),
    'app records'
);
select ok(not has_function_privilege('public', 'ticketiq.run_trace_context(uuid)', 'execute'), 'PUBLIC may not read');
select ok(
    not has_function_privilege('public', 'ticketiq.record_trace_context(text, text, text, text)', 'execute'),
    'PUBLIC may not record'
);

select * from finish();
rollback;
