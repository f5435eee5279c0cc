-- fire_due_timers: a timer is its run's (issue 46, finding 4).  Two runs
-- sleeping on the same wait key: the first run's due timer wakes the first
-- run only; the second stays suspended until its own timer is due.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'timer:nap', 30);
select ticketiq.wait_run(tiq_test.rid(2), 1, 'k1', 'timer:nap', 60);
select tiq_test.advance(30);

select results_eq(
    $$select f.run_id, f.woken from ticketiq.fire_due_timers() as f$$,
    $$values (tiq_test.rid(1), 1)$$, 'the first run''s timer fired, one run woken'
);
select results_eq(
    $$select r.run_id, r.status::text from ticketiq.runs as r order by r.run_id$$,
    $$values (tiq_test.rid(1), 'claimed'::text), (tiq_test.rid(2), 'suspended'::text)$$,
    'the first run woken, the second still asleep'
);
select tiq_test.advance(30);
select results_eq(
    $$select f.run_id, f.woken from ticketiq.fire_due_timers() as f$$,
    $$values (tiq_test.rid(2), 1)$$, 'the second run''s own timer wakes it'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'agent.run.woken'),
    2::bigint, 'each run woken once'
);

select * from finish();
rollback;
