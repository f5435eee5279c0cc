-- upsert_cron_schedule: a new schedule is stored, enabled, first firing now
-- by the database clock (or at p_first_at when given), channel 'cron' by
-- default.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

select results_eq(
    $$select c.name, c.next_fire_at, c.enabled
      from ticketiq.upsert_cron_schedule('nightly', 86400, '{"report": "daily"}', 'ops@example.com', 'agent:ops')
      as c$$,
    $$values ('nightly'::text, '2030-01-01 00:00:00+00'::timestamptz, true)$$,
    'returns the schedule, enabled, first firing now'
);
select results_eq(
    $$select c.every_seconds, c.payload, c.owner, c.run_as, c.channel, c.enabled
      from ticketiq.cron_schedules as c where c.name = 'nightly'$$,
    $$values (86400::double precision, '{"report": "daily"}'::jsonb, 'ops@example.com'::text, 'agent:ops'::text,
              'cron'::text, true)$$,
    'stored with its interval, payload and identity; channel cron by default'
);
select results_eq(
    $$select c.name, c.next_fire_at, c.enabled
      from ticketiq.upsert_cron_schedule('hourly', 3600, '{}', 'o', 'ra', 'teams', '2030-01-01 06:00:00+00', false)
      as c$$,
    $$values ('hourly'::text, '2030-01-01 06:00:00+00'::timestamptz, false)$$,
    'p_first_at and p_enabled are taken as given'
);

select * from finish();
rollback;
