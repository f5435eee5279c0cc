-- register_process: an empty process id raises TQ004.
begin;
select plan(3);

select tiq_test.save_fingerprint();
select throws_ok($$select ticketiq.register_process('')$$, 'TQ004', null, 'empty process id');
select throws_ok($$select ticketiq.register_process(null)$$, 'TQ004', null, 'null process id');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
