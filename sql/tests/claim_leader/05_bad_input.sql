-- claim_leader: an empty name or holder or a TTL that is not positive
-- raises TQ004.
begin;
select plan(6);

select tiq_test.save_fingerprint();
select throws_ok($$select ticketiq.claim_leader('', 'p1', 10)$$, 'TQ004', null, 'empty name');
select throws_ok($$select ticketiq.claim_leader('sweep', '', 10)$$, 'TQ004', null, 'empty holder');
select throws_ok($$select ticketiq.claim_leader('sweep', null, 10)$$, 'TQ004', null, 'null holder');
select throws_ok($$select ticketiq.claim_leader('sweep', 'p1', 0)$$, 'TQ004', null, 'ttl 0');
select throws_ok($$select ticketiq.claim_leader('sweep', 'p1', 'NaN')$$, 'TQ004', null, 'ttl NaN');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
