-- adopt_run: a claimed child its parent waits for with others, the first to
-- end (ticketiq.first_waits, ctx.first), is adopted by any process even
-- while its parent runs: the parent polls for the first end and never runs
-- it; a child of the same running parent outside the group is left to it.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), false);
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.new_child(tiq_test.rid(1), 'k.0', 'c1', 8, tiq_test.rid(3));
select ticketiq.await_first(tiq_test.rid(1), 1, 'k', array[tiq_test.rid(3)]);
select ticketiq.release_run(tiq_test.rid(2), 1);
select ticketiq.release_run(tiq_test.rid(3), 1);

select is(
    (select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'running',
    'the parent runs (it may not wait: it polls)'
);
select is(
    (select a.run_id from ticketiq.adopt_run('w1', 8) as a), tiq_test.rid(3),
    'the child of its first-of group is adopted'
);
select is_empty(
    $$select 1 from ticketiq.adopt_run('w1', 8)$$,
    'its other child is left to it'
);

select * from finish();
rollback;
