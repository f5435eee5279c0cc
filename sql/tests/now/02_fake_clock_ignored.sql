-- now: where config.fake_clock_allowed is false (production), the setting
-- ticketiq.fake_now is ignored, so no session can stretch a lease by faking
-- time (I11).
begin;
select plan(3);

update ticketiq.config set fake_clock_allowed = false;
select set_config('ticketiq.fake_now', '2000-01-01 00:00:00+00', true);

select cmp_ok(
    abs(extract(epoch from ticketiq.now() - clock_timestamp())), '<', 60::numeric,
    'not allowed: now() is the real clock'
);
select cmp_ok(
    (select s.lease_expires_at from ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8) as s),
    '>', '2020-01-01 00:00:00+00'::timestamptz,
    'leases are decided by the real clock'
);
select is(
    (select c.fake_clock_allowed from ticketiq.config as c), false,
    'the fake clock is off by default'
);

select * from finish();
rollback;
