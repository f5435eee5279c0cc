-- upsert_cron_schedule: an interval that is not positive, an empty name or
-- identity, a null enabled flag or a payload that is not a JSON object
-- raises TQ004 and writes nothing (an existing schedule is not changed).
begin;
select plan(13);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 86400, '{}', 'o', 'ra');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.upsert_cron_schedule('nightly', 0, '{}', 'o', 'ra')$$, 'TQ004', null, 'every 0');
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', -60, '{}', 'o', 'ra')$$, 'TQ004', null, 'every negative'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', null, '{}', 'o', 'ra')$$, 'TQ004', null, 'every null'
);
select throws_ok($$select ticketiq.upsert_cron_schedule('', 60, '{}', 'o', 'ra')$$, 'TQ004', null, 'an empty name');
select throws_ok($$select ticketiq.upsert_cron_schedule(null, 60, '{}', 'o', 'ra')$$, 'TQ004', null, 'a null name');
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', 60, '{}', '', 'ra')$$, 'TQ004', null, 'an empty owner'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', 60, '{}', 'o', null)$$, 'TQ004', null, 'a null run_as'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', 60, '{}', 'o', 'ra', '')$$, 'TQ004', null, 'an empty channel'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', 60, '{}', 'o', 'ra', 'cron', null, null)$$, 'TQ004', null,
    'a null enabled'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', 60, '[]', 'o', 'ra')$$, 'TQ004', null, 'a payload array'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', 60, null, 'o', 'ra')$$, 'TQ004', null, 'a null payload'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('weekly', 60, '1', 'o', 'ra')$$, 'TQ004', null, 'a payload number'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
