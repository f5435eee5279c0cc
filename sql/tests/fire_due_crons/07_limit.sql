-- fire_due_crons: at most p_limit schedules fire per call, the longest due
-- first; the others fire on the next call.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('b', 3600, '{}', 'o', 'ra', 'cron', '2030-01-01 00:00:10+00');
select ticketiq.upsert_cron_schedule('a', 3600, '{}', 'o', 'ra', 'cron', '2030-01-01 00:00:20+00');
select tiq_test.advance(30);

select results_eq(
    $$select f.name from ticketiq.fire_due_crons(true, 1) as f$$,
    $$values ('b'::text)$$,
    'limit 1: the longest due fires'
);
select results_eq(
    $$select f.name from ticketiq.fire_due_crons(true, 1) as f$$,
    $$values ('a'::text)$$,
    'the next call fires the other'
);

select * from finish();
rollback;
