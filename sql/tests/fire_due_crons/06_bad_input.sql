-- fire_due_crons: a limit below 1 or a null durable flag raises TQ004 and
-- fires nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 3600, '{}', 'o', 'ra');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.fire_due_crons(true, 0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select ticketiq.fire_due_crons(true, null)$$, 'TQ004', null, 'limit null');
select throws_ok($$select ticketiq.fire_due_crons(null)$$, 'TQ004', null, 'durable null');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing fired');

select * from finish();
rollback;
