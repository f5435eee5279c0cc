-- slow_vendor: after a 429 with Retry-After 2, no call takes a token for 2
-- seconds (the wait is what is left of them), a shorter later Retry-After
-- does not shorten it; a vendor with no limit changes nothing.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 3600, tiq_test.rid(1));
select ticketiq.set_vendor_limit('jira', 100, 100, null);

select is(ticketiq.slow_vendor('jira', null, 2), true, 'slowed');
select is(ticketiq.slow_vendor('jira', null, 1), true, 'a shorter wait later');
select results_eq(
    $$select t.granted, t.wait_seconds from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c1') as t$$,
    $$values (false, 2::double precision)$$,
    'the call waits the longer time'
);
select tiq_test.advance(2);
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c1') as t), true,
    'after it: granted');
select is(ticketiq.slow_vendor('slack', null, 5), false, 'a vendor with no limit');

select * from finish();
rollback;
