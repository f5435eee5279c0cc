-- suspend_run: a parent that suspends on a child run already finished
-- (completed or failed, or whose answer is sealed) is woken at once; one
-- whose child still runs stays suspended.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 60, tiq_test.rid(11));
select ticketiq.seal_answer(tiq_test.rid(11), 1, 1, '{"text": "found"}', 's', 'k1', 600);
select ticketiq.hand_on_answer(tiq_test.rid(11), 1);
select tiq_test.new_run('p1', 60, tiq_test.rid(2), true);
select tiq_test.new_child(tiq_test.rid(2), 'deleg-2', 'c1', 60, tiq_test.rid(12));
select ticketiq.fail_run(tiq_test.rid(12), 1, 'tool broken');
select tiq_test.new_run('p1', 60, tiq_test.rid(3), true);
select tiq_test.new_child(tiq_test.rid(3), 'deleg-3', 'c1', 60, tiq_test.rid(13));
select ticketiq.seal_answer(tiq_test.rid(13), 1, 1, '{"text": "found"}', 's', 'k1', 600);
select tiq_test.new_run('p1', 60, tiq_test.rid(4), true);
select tiq_test.new_child(tiq_test.rid(4), 'deleg-4', 'c1', 60, tiq_test.rid(14));

select results_eq(
    $$select s.status, s.epoch from ticketiq.suspend_run(tiq_test.rid(1), 1, 'child:' || tiq_test.rid(11)::text) as s$$,
    $$values ('claimed'::text, 3::bigint)$$,
    'the child completed: woken at once'
);
select results_eq(
    $$select s.status, s.epoch from ticketiq.suspend_run(tiq_test.rid(2), 1, 'child:' || tiq_test.rid(12)::text) as s$$,
    $$values ('claimed'::text, 3::bigint)$$,
    'the child failed: woken at once'
);
select results_eq(
    $$select s.status, s.epoch from ticketiq.suspend_run(tiq_test.rid(3), 1, 'child:' || tiq_test.rid(13)::text) as s$$,
    $$values ('claimed'::text, 3::bigint)$$,
    'the child''s answer is sealed: woken at once'
);
select results_eq(
    $$select s.status, s.epoch from ticketiq.suspend_run(tiq_test.rid(4), 1, 'child:' || tiq_test.rid(14)::text) as s$$,
    $$values ('suspended'::text, 2::bigint)$$,
    'the child still runs: the parent stays suspended'
);

select * from finish();
rollback;
