-- take_vendor_token: a bucket of burst 2 at 1 call a second grants two calls
-- at once, refuses the third with the seconds until a token, and grants
-- again once the database clock has refilled one.  A vendor with no limit
-- grants at once and keeps no bucket.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 3600, tiq_test.rid(1));
select ticketiq.set_vendor_limit('jira', 1, 2, null);

select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c1') as t), true, 'first');
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c2') as t), true, 'second');
select results_eq(
    $$select t.granted, round(t.wait_seconds::numeric, 3)
      from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c3') as t$$,
    $$values (false, 1.000)$$,
    'the third waits a second for a token'
);
select tiq_test.advance(0.5);
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c3') as t), false,
    'half a second later: still no token');
select tiq_test.advance(0.5);
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c3') as t), true,
    'a second later: granted');
select is(
    (select t.granted from ticketiq.take_vendor_token('slack', tiq_test.rid(1), 1, 'c4') as t)
    and not exists (select 1 from ticketiq.vendor_buckets as b where b.vendor = 'slack'),
    true, 'a vendor with no limit grants, no bucket'
);

select * from finish();
rollback;
