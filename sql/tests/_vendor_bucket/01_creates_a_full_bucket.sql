-- _vendor_bucket: a vendor's first call creates its bucket full (burst
-- tokens, refilled now), the vendor's (scope '') or, per owner, the owner's
-- ('' for no owner); a bucket that exists is read, not made anew.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.set_vendor_limit('jira', 1, 4, null);
select ticketiq.set_vendor_limit('mail', 1, 2, null, 'owner');

select results_eq(
    $$select g.o_scope, g.o_tokens
      from ticketiq._vendor_bucket(
          (select l from ticketiq.vendor_limits as l where l.vendor = 'jira'), 'alice', ticketiq.now()) as g$$,
    $$values (''::text, 4::double precision)$$,
    'a new bucket of the vendor''s, whatever the owner: scope '''', burst tokens'
);
select results_eq(
    $$select b.scope, b.tokens, b.refilled_at from ticketiq.vendor_buckets as b where b.vendor = 'jira'$$,
    $$values (''::text, 4::double precision, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'stored full, refilled now'
);
select results_eq(
    $$select g.o_scope, g.o_tokens
      from ticketiq._vendor_bucket(
          (select l from ticketiq.vendor_limits as l where l.vendor = 'mail'), 'alice', ticketiq.now()) as g$$,
    $$values ('alice'::text, 2::double precision)$$,
    'per owner: the owner''s bucket'
);
select results_eq(
    $$select g.o_scope
      from ticketiq._vendor_bucket(
          (select l from ticketiq.vendor_limits as l where l.vendor = 'mail'), null, ticketiq.now()) as g$$,
    $$values (''::text)$$,
    'per owner, no owner: scope '''''
);
select is(
    (select count(*)::integer from ticketiq.vendor_buckets),
    3, 'one row a bucket'
);

update ticketiq.vendor_buckets as b set tokens = 0.5 where b.vendor = 'jira';
select tiq_test.advance(0.25);
select is(
    (select g.o_tokens from ticketiq._vendor_bucket(
        (select l from ticketiq.vendor_limits as l where l.vendor = 'jira'), null, ticketiq.now()) as g),
    0.75::double precision,
    'a bucket that exists is refilled from what it stores, not made full again'
);

select * from finish();
rollback;
