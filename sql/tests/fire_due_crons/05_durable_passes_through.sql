-- fire_due_crons: p_durable false (TICKETIQ_CRASH_RESUME_ENTRIES=false)
-- passes to the entry, and through claim_entries to its run.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 3600, '{}', 'o', 'ra');
select ticketiq.upsert_cron_schedule('hourly', 3600, '{}', 'o', 'ra', 'cron', '2030-01-01 00:00:01+00');
select ticketiq.fire_due_crons(false);
select tiq_test.advance(1);
select ticketiq.fire_due_crons();

select results_eq(
    $$select split_part(e.sender_id, '@', 1), e.durable from ticketiq.entries as e order by e.entry_id$$,
    $$values ('nightly'::text, false), ('hourly', true)$$,
    'durable false and the default true reach the entries'
);

create temp table claimed on commit drop as
select c.* from ticketiq.claim_entries('p1', 8) as c;

select results_eq(
    $$select split_part(c.sender_id, '@', 1), r.durable, r.entry_point::text, r.may_wait
      from claimed as c inner join ticketiq.runs as r on c.run_id = r.run_id order by c.entry_id$$,
    $$values ('nightly'::text, false, 'cron'::text, false), ('hourly', true, 'cron', false)$$,
    'and the runs started for them'
);
select is(
    (select r.idempotency_key = 'entry:' || c.entry_id from claimed as c
     inner join ticketiq.runs as r on c.run_id = r.run_id
     where c.sender_id = 'nightly@' || '2030-01-01 00:00:00+00'::timestamptz::text),
    true,
    'the cron entry''s sender id is <name>@<fire time>; its run is keyed by the entry'
);

select * from finish();
rollback;
