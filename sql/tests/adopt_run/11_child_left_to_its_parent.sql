-- adopt_run: without a run id, a claimed child whose parent is running or
-- claimed is left to its parent (which asks again by its delegation key and
-- takes it over once, ticketiq.take_over_child); a child whose parent is
-- neither (suspended, finished) is adopted as any run; given its run id, a
-- child is adopted whatever its parent.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'p1', 8, tiq_test.rid(2));
select tiq_test.lose(tiq_test.rid(1));  -- both lapse and are swept: claimed

select is(
    (select a.run_id from ticketiq.adopt_run('w1', 8) as a), tiq_test.rid(1),
    'the claimed parent is adopted'
);
select is_empty(
    $$select 1 from ticketiq.adopt_run('w1', 8)$$,
    'its child is left to it while it runs'
);
select is(
    (select a.run_id from ticketiq.adopt_run('p1', 8, tiq_test.rid(2)) as a), tiq_test.rid(2),
    'asked for by its run id, the child is adopted'
);

select ticketiq.fail_run(tiq_test.rid(2), tiq_test.epoch(tiq_test.rid(2)), 'done with', 'agent.run.failed');
select ticketiq.fail_run(tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 'done with', 'agent.run.failed');
select tiq_test.new_run('p1', 8, tiq_test.rid(3), true);
select tiq_test.new_child(tiq_test.rid(3), 'deleg-3', 'p1', 8, tiq_test.rid(4));
select ticketiq.suspend_run(tiq_test.rid(3), 1, 'child:' || tiq_test.rid(4)::text);
select tiq_test.lose(tiq_test.rid(4));
select is(
    (select a.run_id from ticketiq.adopt_run('w1', 8) as a), tiq_test.rid(4),
    'a child whose parent suspended to wait for it is adopted by any worker'
);

select * from finish();
rollback;
