-- take_vendor_token: at a concurrency of 1 a second call waits while the
-- first is in flight; given back, the next is granted; a call of a run
-- that was lost (claimed at a new epoch: its process died) no longer
-- counts, with nothing given back.  The same call again at the same epoch
-- is granted again, nothing more taken.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p2', 3600, tiq_test.rid(2));
select ticketiq.set_vendor_limit('jira', null, 1, 1);

select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'a') as t), true, 'first');
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'a') as t), true,
    'the same call again: granted, nothing more taken');
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(2), 1, 'b') as t), false,
    'another call waits while it is in flight');
select tiq_test.lose(tiq_test.rid(1));
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(2), 1, 'b') as t), true,
    'its run lost: its call no longer counts');
select ticketiq.give_vendor_token(tiq_test.rid(2), 'b');
select is((select f.in_flight from ticketiq.vendor_limit_figures() as f where f.vendor = 'jira'), 0,
    'given back: none in flight');

select * from finish();
rollback;
