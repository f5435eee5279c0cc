-- vendor_limit_figures: a vendor no call took from has one row with a null
-- scope and a full bucket; after takes and a wait, the counts say so.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 3600, tiq_test.rid(1));
select ticketiq.set_vendor_limit('jira', 1, 1, null);
select ticketiq.set_vendor_limit('slack', 1, 3, null);
select ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'a');
select ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'b');

select results_eq(
    $$select f.vendor, f.scope, f.taken, f.waited from ticketiq.vendor_limit_figures() as f$$,
    $$values ('jira'::text, ''::text, 1::bigint, 1::bigint), ('slack', null, 0, 0)$$,
    'taken and waited, per bucket'
);
select is((select f.tokens from ticketiq.vendor_limit_figures() as f where f.vendor = 'slack'),
    3::double precision, 'an untouched vendor: a full bucket');

select * from finish();
rollback;
