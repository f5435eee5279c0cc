-- suspend_for_vendor: at 2 a second with its one token taken, three runs
-- that suspend for a token are given turns half a second apart, in the
-- order they suspended (each turn's token taken from the bucket then, which
-- owes them); each is suspended on vendor:jira at epoch + 1 with no lease,
-- and fire_due_timers wakes each at its turn, that run only.  A woken
-- call's take is granted with its turn's token, nothing more taken: a
-- newcomer still waits for the bucket to be paid back; two woken late
-- together send a token apart, and the one whose turn came is not
-- suspended again: it keeps its token and its lease, and looks again a
-- token after the other's grant.
begin;
select plan(13);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.new_run('p2', 8, tiq_test.rid(3));
select tiq_test.new_run('p2', 8, tiq_test.rid(4));
select ticketiq.set_vendor_limit('jira', 2, 1, null);
select ticketiq.take_vendor_token('jira', tiq_test.rid(4), 1, 'first');

select results_eq(
    $$select extract(epoch from s.due_at - ticketiq.now())::numeric(6, 3), s.epoch
      from ticketiq.suspend_for_vendor('jira', tiq_test.rid(1), 1, 'a') as s
      union all
      select extract(epoch from s.due_at - ticketiq.now())::numeric(6, 3), s.epoch
      from ticketiq.suspend_for_vendor('jira', tiq_test.rid(2), 1, 'b') as s
      union all
      select extract(epoch from s.due_at - ticketiq.now())::numeric(6, 3), s.epoch
      from ticketiq.suspend_for_vendor('jira', tiq_test.rid(3), 1, 'c') as s$$,
    $$values (0.5::numeric(6, 3), 2::bigint), (1.0, 2), (1.5, 2)$$,
    'turns a token apart, in order'
);
select results_eq(
    $$select r.status::text, r.wait_key, r.lease_holder from ticketiq.runs as r
      where r.run_id = tiq_test.rid(2)$$,
    $$values ('suspended'::text, 'vendor:jira'::text, null::text)$$, 'suspended on the vendor, no lease'
);
select tiq_test.advance(0.5);
select results_eq(
    $$select f.run_id, f.woken from ticketiq.fire_due_timers() as f$$,
    $$values (tiq_test.rid(1), 1)$$, 'at the first turn only the first run is woken'
);
select is(
    (select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(2)), 'suspended',
    'the second still waits its turn'
);
select a.epoch from ticketiq.adopt_run('p3', 8, tiq_test.rid(1)) as a;
select is(
    (select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)),
        'a') as t),
    true, 'the woken call is granted with its turn''s token'
);
select is(
    (select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(4), 1, 'newcomer') as t),
    false, 'a newcomer waits: the bucket still owes the other turns'
);
select is((select count(*)::integer from ticketiq.vendor_turns), 2, 'the used turn is gone, two kept');
select tiq_test.advance(1.5);
select is((select count(*)::integer from ticketiq.fire_due_timers() as f where f.woken = 1), 2,
    'the others at theirs, late, in one pass');
select a.epoch from ticketiq.adopt_run('p3', 8, tiq_test.rid(2)) as a;
select a.epoch from ticketiq.adopt_run('p3', 8, tiq_test.rid(3)) as a;
select is(
    (select t.granted from ticketiq.take_vendor_token('jira', tiq_test.rid(2), tiq_test.epoch(tiq_test.rid(2)),
        'b') as t),
    true, 'the second woken is granted'
);
select results_eq(
    $$select t.granted, t.wait_seconds::numeric(6, 3) from ticketiq.take_vendor_token('jira', tiq_test.rid(3),
        tiq_test.epoch(tiq_test.rid(3)), 'c') as t$$,
    $$values (false, 0.5::numeric(6, 3))$$, 'the third, woken with it, a token later'
);
select tokens::numeric(6, 3) as owed from ticketiq.vendor_buckets where vendor = 'jira' \gset
select results_eq(
    $$select extract(epoch from s.due_at - ticketiq.now())::numeric(6, 3), s.suspended
      from ticketiq.suspend_for_vendor('jira', tiq_test.rid(3), tiq_test.epoch(tiq_test.rid(3)), 'c') as s$$,
    $$values (0.5::numeric(6, 3), false)$$, 'its turn came: not suspended, it looks again a token after the grant'
);
select is((select b.tokens::numeric(6, 3) from ticketiq.vendor_buckets as b where b.vendor = 'jira'),
    :'owed'::numeric(6, 3), 'its token kept: nothing more taken');
select results_eq(
    $$select f.taken, f.suspended, f.waiting from ticketiq.vendor_limit_figures() as f where f.vendor = 'jira'$$,
    $$values (3::bigint, 3::bigint, 0)$$, 'three taken, three suspended, none suspended now'
);

select * from finish();
rollback;
