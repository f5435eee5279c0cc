-- unrunnable_runs: a limit outside 1..1000 is TQ004.
begin;
select plan(3);

select throws_ok($$select * from ticketiq.unrunnable_runs(null)$$, 'TQ004', null, 'null limit');
select throws_ok($$select * from ticketiq.unrunnable_runs(0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select * from ticketiq.unrunnable_runs(1001)$$, 'TQ004', null, 'limit 1001');

select * from finish();
rollback;
