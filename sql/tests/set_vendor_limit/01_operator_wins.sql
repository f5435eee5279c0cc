-- set_vendor_limit: the app's start sets its limits and changes them on its
-- next start; once an operator set them, the app's start changes nothing;
-- a lower burst caps a bucket's tokens at once.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select is((select s.rate from ticketiq.set_vendor_limit('jira', 10, 10, null) as s), 10::double precision, 'app');
select is((select s.rate from ticketiq.set_vendor_limit('jira', 20, 10, null) as s), 20::double precision,
    'the app again: its new value');
select is((select s.rate from ticketiq.set_vendor_limit('jira', 5, 2, 3, 'all', 'operator') as s),
    5::double precision, 'an operator');
select is(
    (select row(s.rate, s.burst, s.concurrency, s.set_by)::text
     from ticketiq.set_vendor_limit('jira', 50, 50, null) as s),
    '(5,2,3,operator)', 'the app''s start no longer changes it'
);

select * from finish();
rollback;
