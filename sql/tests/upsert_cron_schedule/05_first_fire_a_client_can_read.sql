-- upsert_cron_schedule: a first fire PostgreSQL stores but a client cannot
-- read back (Python's datetime stops at years 1 and 9999) is refused with
-- TQ004 and nothing is written; its limits, 0001-01-02 and 9999-12-31 UTC,
-- are accepted.  A schedule stored before the rule with such a next fire is
-- not kept by an upsert without p_first_at (TQ004: it must be given), and one
-- with p_first_at moves it.  Before, 294276-01-01 was stored, and every later
-- upsert of the schedule returned it: psycopg failed loading the row.
begin;
select plan(14);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 86400, '{}', 'o', 'ra', 'cron', '2030-01-02 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    format($$select ticketiq.upsert_cron_schedule(%L, 60, '{}', 'o', 'ra', 'cron', %L)$$, c.name, c.first_at),
    'TQ004', null, c.what
)
from (values
    ('nightly', '294276-01-01', 'a change to a first fire in 294276'),
    ('new', '294276-01-01', 'a new schedule first firing in 294276'),
    ('nightly', '4713-01-01 BC', 'a change to a first fire in 4713 BC'),
    ('new', '4713-01-01 BC', 'a new schedule first firing in 4713 BC'),
    ('new', '0001-01-01 23:59:59+00', 'a second before 0001-01-02 UTC'),
    ('new', '9999-12-31 00:00:01+00', 'a second after 9999-12-31 UTC')
) as c (name, first_at, what);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select is(
    (select u.next_fire_at from ticketiq.upsert_cron_schedule(c.name, 60, '{}', 'o', 'ra', 'cron', c.first_at) as u),
    c.first_at,
    c.what
)
from (values
    ('low', '0001-01-02 00:00:00+00'::timestamptz, '0001-01-02 UTC: accepted'),
    ('high', '9999-12-31 00:00:00+00', '9999-12-31 UTC: accepted')
) as c (name, first_at, what);

-- written before the rule (the app login cannot write the table itself)
update ticketiq.cron_schedules set next_fire_at = '294276-01-01 00:00:00+00' where name = 'nightly';
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.upsert_cron_schedule('nightly', 60, '{"v": 2}', 'o', 'ra')$$,
    'TQ004', null, 'an upsert without p_first_at does not keep a next fire in 294276'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select results_eq(
    $$select c.name, c.next_fire_at
      from ticketiq.upsert_cron_schedule('nightly', 60, '{"v": 2}', 'o', 'ra', 'cron', '2030-01-03 00:00:00+00') as c$$,
    $$values ('nightly'::text, '2030-01-03 00:00:00+00'::timestamptz)$$,
    'one with p_first_at moves it'
);
select is(
    (select c.payload from ticketiq.cron_schedules as c where c.name = 'nightly'), '{"v": 2}'::jsonb,
    'and changes it'
);

-- what fire_due_crons fires, it returns: a time a client reads
select tiq_test.advance(86400 * 3);
select results_eq(
    $$select f.name, f.fire_at from ticketiq.fire_due_crons() as f order by f.name$$,
    $$values ('low'::text, '0001-01-02 00:00:00+00'::timestamptz),
        ('nightly', '2030-01-03 00:00:00+00')$$,
    'the schedule at the low limit fires with a readable fire time; the one at the high limit waits'
);

select * from finish();
rollback;
