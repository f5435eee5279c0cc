-- suspend_for_vendor: a writer at a stale epoch (TQ002), a vendor with no
-- limit, an empty call id, an owner past 512 bytes or a run not written
-- ahead (TQ004) change nothing.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 3600, tiq_test.rid(1));
select tiq_test.new_run('p1', 3600, tiq_test.rid(2), false, false);
select ticketiq.set_vendor_limit('jira', 1, 1, null);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.suspend_for_vendor('jira', tiq_test.rid(1), 2, 'c1')$$, 'TQ002', null,
    'a stale epoch'
);
select throws_ok(
    $$select * from ticketiq.suspend_for_vendor('nolimit', tiq_test.rid(1), 1, 'c1')$$, 'TQ004', null,
    'a vendor with no limit'
);
select throws_ok(
    $$select * from ticketiq.suspend_for_vendor('jira', tiq_test.rid(1), 1, '')$$, 'TQ004', null,
    'an empty call id'
);
select throws_ok(
    $$select * from ticketiq.suspend_for_vendor('jira', tiq_test.rid(1), 1, 'c1', repeat('é', 257))$$,
    'TQ004', null, 'an owner past 512 bytes'
);
select throws_ok(
    $$select * from ticketiq.suspend_for_vendor('jira', tiq_test.rid(2), 1, 'c1')$$, 'TQ004', null,
    'a run not written ahead'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
