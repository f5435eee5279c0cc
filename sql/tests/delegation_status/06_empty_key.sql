-- delegation_status: an empty or null delegation key raises TQ004.
begin;
select plan(2);

select throws_ok($$select * from ticketiq.delegation_status('')$$, 'TQ004', null, 'empty key');
select throws_ok($$select * from ticketiq.delegation_status(null)$$, 'TQ004', null, 'null key');

select * from finish();
rollback;
