-- fire_due_crons: a disabled schedule does not fire, however long overdue,
-- and keeps its next fire time; enabled again, it fires.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 3600, '{}', 'o', 'ra', 'cron', null, false);
select tiq_test.advance(7200);

select is_empty($$select 1 from ticketiq.fire_due_crons()$$, 'the disabled schedule does not fire');
select is((select count(*) from ticketiq.entries), 0::bigint, 'no entry');
select is(
    (select c.next_fire_at from ticketiq.cron_schedules as c), '2030-01-01 00:00:00+00'::timestamptz,
    'its next fire time is kept'
);

select ticketiq.upsert_cron_schedule('nightly', 3600, '{}', 'o', 'ra', 'cron', null, true);
select is((select count(*) from ticketiq.fire_due_crons()), 1::bigint, 'enabled again, it fires');

select * from finish();
rollback;
