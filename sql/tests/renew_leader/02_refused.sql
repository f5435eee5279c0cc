-- renew_leader: false for a stale epoch, another holder, a lapsed lease or
-- an unknown lease, changing nothing; TQ004 for a TTL that is not positive.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.claim_leader('sweep', 'p1', 10);
select tiq_test.save_fingerprint();

select is(ticketiq.renew_leader('sweep', 'p1', 2, 10), false, 'another epoch');
select is(ticketiq.renew_leader('sweep', 'p2', 1, 10), false, 'another holder');
select is(ticketiq.renew_leader('nope', 'p1', 1, 10), false, 'an unknown lease');
select is(ticketiq.renew_leader('sweep', 'p1', null, 10), false, 'a null epoch');
select throws_ok($$select ticketiq.renew_leader('sweep', 'p1', 1, 0)$$, 'TQ004', null, 'ttl 0');
select throws_ok($$select ticketiq.renew_leader('sweep', 'p1', 1, -5)$$, 'TQ004', null, 'ttl negative');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select tiq_test.advance(10);
select is(ticketiq.renew_leader('sweep', 'p1', 1, 10), false, 'a lapsed lease is not revived');

select * from finish();
rollback;
