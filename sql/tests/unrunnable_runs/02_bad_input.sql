-- unrunnable_runs: a limit outside 1..1000, or a status other than claimed or
-- suspended, is TQ004.
begin;
select plan(4);

select throws_ok($$select * from ticketiq.unrunnable_runs(null)$$, 'TQ004', null, 'null limit');
select throws_ok($$select * from ticketiq.unrunnable_runs(0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select * from ticketiq.unrunnable_runs(1001)$$, 'TQ004', null, 'limit 1001');
select throws_ok($$select * from ticketiq.unrunnable_runs(10, 'running')$$, 'TQ004', null, 'status running');

select * from finish();
rollback;
