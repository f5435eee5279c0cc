-- slow_vendor: seconds outside 0..3600 (or NaN, or null) are refused
-- (TQ004), nothing changed.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.set_vendor_limit('jira', 1, 1, null);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.slow_vendor('jira', null, -1)$$, 'TQ004', null, 'negative');
select throws_ok($$select ticketiq.slow_vendor('jira', null, 3601)$$, 'TQ004', null, 'past an hour');
select throws_ok($$select ticketiq.slow_vendor('jira', null, 'NaN')$$, 'TQ004', null, 'NaN');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
