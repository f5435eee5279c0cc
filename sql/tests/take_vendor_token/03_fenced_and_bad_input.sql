-- take_vendor_token: a writer at a stale epoch takes nothing (TQ002); an
-- empty call id or an owner past 512 bytes is refused (TQ004); nothing
-- changes either way.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 3600, tiq_test.rid(1));
select ticketiq.set_vendor_limit('jira', 1, 1, null);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 2, 'c1')$$, 'TQ002', null, 'a stale epoch'
);
select throws_ok(
    $$select * from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, '')$$, 'TQ004', null, 'an empty call id'
);
select throws_ok(
    $$select * from ticketiq.take_vendor_token('jira', tiq_test.rid(1), 1, 'c1', repeat('é', 257))$$,
    'TQ004', null, 'an owner past 512 bytes'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
