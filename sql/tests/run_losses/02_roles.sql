-- run_losses: ticketiq_app and ticketiq_operator may read a run's losses; PUBLIC may not.
begin;
select plan(3);

select ok(has_function_privilege('ticketiq_app', 'ticketiq.run_losses(uuid)', 'execute'), 'ticketiq_app may');
select ok(
    has_function_privilege('ticketiq_operator', 'ticketiq.run_losses(uuid)', 'execute'), 'ticketiq_operator may'
);
select ok(not has_function_privilege('public', 'ticketiq.run_losses(uuid)', 'execute'), 'PUBLIC may not');

select * from finish();
rollback;
