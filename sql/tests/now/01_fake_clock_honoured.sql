-- now: the fake clock (ticketiq.fake_now) moves the database clock only
-- where ticketiq.config.fake_clock_allowed is true (test databases).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select is(ticketiq.now(), '2030-01-01 00:00:00+00'::timestamptz, 'allowed: now() is the fake time');
select tiq_test.advance(90);
select is(ticketiq.now(), '2030-01-01 00:01:30+00'::timestamptz, 'and follows it');
select is(
    (select s.lease_expires_at from ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8) as s),
    '2030-01-01 00:01:38+00'::timestamptz,
    'leases are decided by it'
);
select set_config('ticketiq.fake_now', '', true);
select cmp_ok(
    abs(extract(epoch from ticketiq.now() - clock_timestamp())), '<', 60::numeric,
    'an empty setting: the real clock'
);

select * from finish();
rollback;
