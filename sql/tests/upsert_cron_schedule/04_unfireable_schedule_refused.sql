-- upsert_cron_schedule: a schedule that could never fire is refused with
-- TQ004 naming the field, and nothing is written: a first fire at
-- -infinity or infinity, an interval under 1 second or over 1e9 seconds
-- (1e13 seconds overflowed the next fire time), a name over 256 characters.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 86400, '{}', 'o', 'ra');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.upsert_cron_schedule('p', 60, '{}', 'o', 'o', 'cron', '-infinity')$$,
    'TQ004', 'first_at must be a finite time from 0001-01-02 to 9999-12-31 UTC, got -infinity',
    'a first fire at -infinity'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', 60, '{}', 'o', 'o', 'cron', 'infinity')$$,
    'TQ004', 'first_at must be a finite time from 0001-01-02 to 9999-12-31 UTC, got infinity',
    'a first fire at infinity'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('p', 1e13, '{}', 'o', 'o')$$,
    'TQ004', 'every must be 1 to 1000000000 seconds, got 10000000000000', 'every 1e13 seconds'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('p', 0.5, '{}', 'o', 'o')$$,
    'TQ004', 'every must be 1 to 1000000000 seconds, got 0.5', 'every half a second'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('p', 'Infinity', '{}', 'o', 'o')$$,
    'TQ004', null, 'every infinity'
);
select throws_ok(
    $$select ticketiq.upsert_cron_schedule(repeat('n', 257), 60, '{}', 'o', 'o')$$,
    'TQ004', 'name must be 1 to 256 characters, got 257', 'a name of 257 characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select is(
    (select c.next_fire_at from ticketiq.upsert_cron_schedule(repeat('n', 256), 1e9, '{}', 'o', 'o') as c),
    '2030-01-01 00:00:00+00'::timestamptz,
    'a name of 256 characters, every 1e9 seconds: accepted'
);

select * from finish();
rollback;
