-- _vendor_bucket: the tokens returned are the stored ones refilled at the
-- rate since the bucket was last refilled, at most the burst; a vendor with
-- no rate holds its burst; the stored row is not changed.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.set_vendor_limit('jira', 2, 3, null);
select ticketiq.set_vendor_limit('slack', null, 5, 1);
insert into ticketiq.vendor_buckets (vendor, scope, tokens, refilled_at)
values ('jira', '', 0.5, '2030-01-01 00:00:00+00'), ('slack', '', 0, '2030-01-01 00:00:00+00');

select is(
    (select g.o_tokens from ticketiq._vendor_bucket(
        (select l from ticketiq.vendor_limits as l where l.vendor = 'jira'), null, '2030-01-01 00:00:01+00') as g),
    2.5::double precision, 'a second at 2/s: 0.5 + 2'
);

select is(
    (select g.o_tokens from ticketiq._vendor_bucket(
        (select l from ticketiq.vendor_limits as l where l.vendor = 'jira'), null, '2030-01-01 00:01:00+00') as g),
    3::double precision, 'a minute: capped at the burst'
);
select tiq_test.use_fake_clock('2029-12-31 23:59:59+00');
select is(
    (select g.o_tokens from ticketiq._vendor_bucket(
        (select l from ticketiq.vendor_limits as l where l.vendor = 'jira'), null, ticketiq.now()) as g),
    0.5::double precision, 'a clock behind the last refill adds nothing'
);
select is(
    (select g.o_tokens from ticketiq._vendor_bucket(
        (select l from ticketiq.vendor_limits as l where l.vendor = 'slack'), null, ticketiq.now()) as g),
    5::double precision, 'no rate: the burst'
);
select results_eq(
    $$select b.tokens, b.refilled_at from ticketiq.vendor_buckets as b where b.vendor = 'jira'$$,
    $$values (0.5::double precision, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'the stored bucket is unchanged'
);

select * from finish();
rollback;
