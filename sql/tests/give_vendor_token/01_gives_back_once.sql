-- give_vendor_token: a call in flight is given back (true); again, or a
-- call never taken, is false; an empty call id is refused (TQ004).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 3600, tiq_test.rid(1));
select ticketiq.set_vendor_limit('jira', null, 1, 2);
select ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'a');

select is(ticketiq.give_vendor_token(tiq_test.rid(1), 'a'), true, 'given back');
select is(ticketiq.give_vendor_token(tiq_test.rid(1), 'a'), false, 'again: nothing');
select throws_ok($$select ticketiq.give_vendor_token(tiq_test.rid(1), '')$$, 'TQ004', null, 'an empty call id');

select * from finish();
rollback;
