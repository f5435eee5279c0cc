-- fail_unrunnable_runs: a bad actor, age or limit is TQ004.
begin;
select plan(5);

select throws_ok($$select * from ticketiq.fail_unrunnable_runs(null, 60)$$, 'TQ004', null, 'null actor');
select throws_ok($$select * from ticketiq.fail_unrunnable_runs('a', 0)$$, 'TQ004', null, 'age 0');
select throws_ok($$select * from ticketiq.fail_unrunnable_runs('a', 'NaN')$$, 'TQ004', null, 'age NaN');
select throws_ok($$select * from ticketiq.fail_unrunnable_runs('a', 60, 0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select * from ticketiq.fail_unrunnable_runs('a', 60, 1001)$$, 'TQ004', null, 'limit 1001');

select * from finish();
rollback;
