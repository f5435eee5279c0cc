-- set_vendor_limit: a bad vendor name, rate, burst, concurrency, per or
-- set_by is refused (TQ004), nothing written.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.set_vendor_limit('Jira', 1, 1, null)$$, 'TQ004', null, 'an upper-case name');
select throws_ok($$select ticketiq.set_vendor_limit(repeat('a', 65), 1, 1, null)$$, 'TQ004', null, 'a long name');
select throws_ok($$select ticketiq.set_vendor_limit('jira', 0, 1, null)$$, 'TQ004', null, 'a rate of 0');
select throws_ok($$select ticketiq.set_vendor_limit('jira', 'NaN', 1, null)$$, 'TQ004', null, 'a NaN rate');
select throws_ok($$select ticketiq.set_vendor_limit('jira', 1, 0, null)$$, 'TQ004', null, 'a burst of 0');
select throws_ok($$select ticketiq.set_vendor_limit('jira', 1, 1, 0)$$, 'TQ004', null, 'a concurrency of 0');
select throws_ok($$select ticketiq.set_vendor_limit('jira', 1, 1, null, 'run', 'app')$$, 'TQ004', null, 'per run');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
