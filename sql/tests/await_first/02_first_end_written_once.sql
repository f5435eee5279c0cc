-- await_first: the first end is written once.  Asked again (a resume after
-- a crash, another process), the run is told the same child, although
-- another child has ended since; a later end wakes nothing, even a run
-- suspended on another key meanwhile.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.new_child(tiq_test.rid(1), 'k.0', 'c1', 60, tiq_test.rid(11));
select tiq_test.new_child(tiq_test.rid(1), 'k.1', 'c1', 60, tiq_test.rid(12));
select ticketiq.await_first(tiq_test.rid(1), 1, 'k', array[tiq_test.rid(11), tiq_test.rid(12)]);
select tiq_test.advance(1);
select ticketiq.seal_answer(tiq_test.rid(11), 1, 1, '{"text": "fast"}', 's', 'k1', 600);
select ticketiq.hand_on_answer(tiq_test.rid(11), 1);
select ticketiq.adopt_run('p2', 60, tiq_test.rid(1));

select results_eq(
    $$select f.outcome, f.child_run_id, f.place
      from ticketiq.await_first(tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 'k', array[tiq_test.rid(11), tiq_test.rid(12)]) as f$$,
    $$values ('first'::text, tiq_test.rid(11), 0)$$,
    'the resumed run is told the first child'
);
select ticketiq.suspend_run(tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 'reply:conv-1');
select tiq_test.advance(1);
select ticketiq.fail_run(tiq_test.rid(12), 1, 'slow');
select results_eq(
    $$select r.status::text, r.wait_key from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('suspended'::text, 'reply:conv-1'::text)$$,
    'the later end wakes nothing'
);
select is(
    (select count(*) from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.woken'),
    1::bigint, 'the run was woken once'
);
select ticketiq.wake_runs('reply:conv-1');
select ticketiq.adopt_run('p3', 60, tiq_test.rid(1));
select results_eq(
    $$select f.outcome, f.child_run_id, f.place
      from ticketiq.await_first(tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 'k', array[tiq_test.rid(11), tiq_test.rid(12)]) as f$$,
    $$values ('first'::text, tiq_test.rid(11), 0)$$,
    'asked again after both ended: still the first'
);
select is(
    (select count(*) from ticketiq.first_ends as f where f.run_id = tiq_test.rid(1)),
    1::bigint, 'one first end'
);

select * from finish();
rollback;
