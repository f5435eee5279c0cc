-- fire_due_crons: a schedule due by the database clock writes one pending
-- entry of kind cron, sender id <name>@<fire time>, its payload with the
-- schedule's name and fire time added, and moves to its next fire time; a
-- schedule not yet due does not fire.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 3600, '{"report": "daily"}', 'ops@example.com', 'agent:ops');
select ticketiq.upsert_cron_schedule('later', 3600, '{}', 'o', 'ra', 'cron', '2030-01-01 00:00:31+00');
select tiq_test.advance(30);

create temp table fired on commit drop as
select f.* from ticketiq.fire_due_crons() as f;

select results_eq(
    $$select f.name, f.fire_at, f.entry_id = e.entry_id
      from fired as f inner join ticketiq.entries as e on e.kind = 'cron'$$,
    $$values ('nightly'::text, '2030-01-01 00:00:00+00'::timestamptz, true)$$,
    'one fire: nightly at its fire time, with its entry'
);
select results_eq(
    $$select e.kind, e.sender_id, split_part(e.sender_id, '@', 2)::timestamptz, e.state, e.owner, e.run_as,
             e.channel, e.may_wait, e.durable, e.received_at
      from ticketiq.entries as e$$,
    $$values ('cron'::text, 'nightly@' || '2030-01-01 00:00:00+00'::timestamptz::text,
              '2030-01-01 00:00:00+00'::timestamptz, 'pending'::text, 'ops@example.com'::text,
              'agent:ops'::text, 'cron'::text, false, true, '2030-01-01 00:00:30+00'::timestamptz)$$,
    'the entry: kind cron, sender id nightly@<fire time>, pending, the schedule''s identity, durable'
);
select results_eq(
    $$select e.payload ->> 'report', e.payload ->> 'cron', (e.payload ->> 'fire_at')::timestamptz
      from ticketiq.entries as e$$,
    $$values ('daily'::text, 'nightly'::text, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'its payload carries the schedule''s name and fire time'
);
select results_eq(
    $$select c.name, c.next_fire_at from ticketiq.cron_schedules as c order by c.name$$,
    $$values ('later'::text, '2030-01-01 00:00:31+00'::timestamptz),
             ('nightly', '2030-01-01 01:00:00+00')$$,
    'nightly moves to its next fire time; later, not due, is untouched'
);
select is(
    (select count(*) from ticketiq.entries as e where e.sender_id like 'later@%'), 0::bigint,
    'the schedule not yet due wrote no entry'
);

select * from finish();
rollback;
