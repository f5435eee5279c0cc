-- release_liveness: TQ004 for an empty id, TQ011 for an unknown process;
-- a session that does not hold the token gets false.
begin;
select plan(3);

select throws_ok($$select ticketiq.release_liveness('')$$, 'TQ004', null, 'an empty id');
select throws_ok($$select ticketiq.release_liveness('nobody')$$, 'TQ011', null, 'an unknown process');
select ticketiq.register_process('p1', 'h', 1);
select is(ticketiq.release_liveness('p1'), false, 'no token held: false');

select * from finish();
rollback;
