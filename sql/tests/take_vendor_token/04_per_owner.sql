-- take_vendor_token: a limit per owner gives each owner a bucket of its
-- own: one owner's burst spent, another owner's call is still granted.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 3600, tiq_test.rid(1));
select ticketiq.set_vendor_limit('jira', 1, 1, null, 'owner');

select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'a', 'alice') as t), true,
    'alice''s first');
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'b', 'alice') as t), false,
    'alice''s second waits');
select is((select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c', 'bob') as t), true,
    'bob''s first is granted');

select * from finish();
rollback;
