-- fire_due_crons: fires missed while nothing was running are not replayed
-- in a burst: one fire (the oldest due), then the schedule moves to its
-- next fire on its own grid after now, and calling again fires nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('minutely', 60, '{}', 'o', 'ra');
select tiq_test.advance(630);

select results_eq(
    $$select f.name, f.fire_at from ticketiq.fire_due_crons() as f$$,
    $$values ('minutely'::text, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'ten missed fires: one fire'
);
select is(
    (select c.next_fire_at from ticketiq.cron_schedules as c), '2030-01-01 00:11:00+00'::timestamptz,
    'the next fire is the next minute of the grid'
);
select is_empty($$select 1 from ticketiq.fire_due_crons()$$, 'nothing more fires now');
select is((select count(*) from ticketiq.entries), 1::bigint, 'one entry written');

select * from finish();
rollback;
