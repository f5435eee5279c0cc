-- _vendor_bucket: the bucket's row is locked for the caller's update (the
-- transaction's own id as the row's locker), and the clock it returns is
-- read after the lock, never before the caller's.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.set_vendor_limit('jira', 1, 4, null);
-- a bucket stored before the call, unlocked
insert into ticketiq.vendor_buckets (vendor, scope, tokens, refilled_at)
values ('jira', '', 1, '2030-01-01 00:00:00+00');

select is(
    (select b.xmax::text from ticketiq.vendor_buckets as b where b.vendor = 'jira'), '0',
    'before the call: no locker'
);
select tiq_test.advance(2);
select is(
    (select g.o_now from ticketiq._vendor_bucket(
        (select l from ticketiq.vendor_limits as l where l.vendor = 'jira'), null, '2030-01-01 00:00:01+00') as g),
    '2030-01-01 00:00:02+00'::timestamptz,
    'the clock read after the lock, later than the caller''s'
);
select is(
    (select b.xmax::text from ticketiq.vendor_buckets as b where b.vendor = 'jira'),
    pg_current_xact_id()::xid::text,
    'after the call: locked by this transaction'
);
select is(
    (select g.o_now from ticketiq._vendor_bucket(
        (select l from ticketiq.vendor_limits as l where l.vendor = 'jira'), null, '2030-01-01 00:00:09+00') as g),
    '2030-01-01 00:00:09+00'::timestamptz,
    'never before the caller''s clock'
);

select * from finish();
rollback;
