-- fire_due_crons: a schedule that cannot fire (written before schema 10
-- refused such schedules: a next fire at -infinity, an interval of 1e13
-- seconds) raises nothing and stops no other schedule: the good one fires,
-- the bad ones are left as they are, and the inbox claims the fire.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
insert into ticketiq.cron_schedules (name, every_seconds, next_fire_at, owner, run_as, channel)
values ('minus_infinity', 60, '-infinity', 'o', 'ra', 'cron'),
    ('huge_interval', 1e13, '2029-12-31 00:00:00+00', 'o', 'ra', 'cron');
select ticketiq.upsert_cron_schedule('nightly', 86400, '{}', 'o', 'ra', 'cron', '2029-12-31 12:00:00+00');
select tiq_test.new_entry('webhook', 'delivery-1');

select lives_ok($$select ticketiq.fire_due_crons()$$, 'fire_due_crons raises nothing');
select results_eq(
    $$select c.name, c.next_fire_at from ticketiq.cron_schedules as c order by c.name$$,
    $$values ('huge_interval'::text, '2029-12-31 00:00:00+00'::timestamptz),
        ('minus_infinity', '-infinity'), ('nightly', '2030-01-01 12:00:00+00')$$,
    'the good schedule moved on; the bad ones did not'
);
select results_eq(
    $$select e.kind, split_part(e.sender_id, '@', 1), nullif(split_part(e.sender_id, '@', 2), '')::timestamptz
      from ticketiq.entries as e order by e.entry_id$$,
    $$values ('webhook'::text, 'delivery-1'::text, null::timestamptz),
        ('cron', 'nightly', '2029-12-31 12:00:00+00')$$,
    'the good schedule fired once'
);
select is(
    (select count(*) from ticketiq.fire_due_crons()), 0::bigint, 'a second call fires nothing and raises nothing'
);
select is(
    (select count(*) from ticketiq.claim_entries('p1', 8)), 2::bigint, 'the inbox claims the webhook and the fire'
);

select * from finish();
rollback;
