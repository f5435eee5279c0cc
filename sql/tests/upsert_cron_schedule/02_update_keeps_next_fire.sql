-- upsert_cron_schedule: changing an existing schedule changes its interval,
-- payload, identity and enabled flag but keeps its next fire time, unless
-- p_first_at is given; there is still one row.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 86400, '{"v": 1}', 'o', 'ra', 'cron', '2030-01-02 00:00:00+00');
select tiq_test.advance(3600);

select results_eq(
    $$select c.name, c.next_fire_at, c.enabled
      from ticketiq.upsert_cron_schedule('nightly', 43200, '{"v": 2}', 'o2', 'ra2', 'teams', null, false) as c$$,
    $$values ('nightly'::text, '2030-01-02 00:00:00+00'::timestamptz, false)$$,
    'the change keeps the next fire time'
);
select results_eq(
    $$select c.every_seconds, c.payload, c.owner, c.run_as, c.channel, c.enabled, c.next_fire_at
      from ticketiq.cron_schedules as c$$,
    $$values (43200::double precision, '{"v": 2}'::jsonb, 'o2'::text, 'ra2'::text, 'teams'::text, false,
              '2030-01-02 00:00:00+00'::timestamptz)$$,
    'one row, changed but for its next fire time'
);
select is(
    (
        select c.next_fire_at
        from ticketiq.upsert_cron_schedule('nightly', 43200, '{}', 'o2', 'ra2', 'cron', '2030-01-05 00:00:00+00') as c
    ),
    '2030-01-05 00:00:00+00'::timestamptz,
    'p_first_at moves it'
);
select is((select count(*) from ticketiq.cron_schedules), 1::bigint, 'still one schedule');

select * from finish();
rollback;
