-- claim_entries: a limit below 1, a negative or null minimum age or a TTL
-- that is not positive raises TQ004 and claims nothing.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('a2a', 'task-1');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.claim_entries('p1', 8, 0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select ticketiq.claim_entries('p1', 8, null)$$, 'TQ004', null, 'limit null');
select throws_ok($$select ticketiq.claim_entries('p1', 8, 10, -1)$$, 'TQ004', null, 'min age -1');
select throws_ok($$select ticketiq.claim_entries('p1', 8, 10, null)$$, 'TQ004', null, 'min age null');
select throws_ok($$select ticketiq.claim_entries('p1', 0)$$, 'TQ004', null, 'ttl 0');
select throws_ok($$select ticketiq.claim_entries('', 8)$$, 'TQ004', null, 'an empty holder');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing claimed');

select * from finish();
rollback;
