-- purge_history: a child run is kept while its parent has not finished (the
-- parent may ask for it again by its delegation key); a parent is kept
-- while it has a child, which goes first; the next call takes the parent.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
-- parent 1 running (lease far ahead), its child 11 failed.
select tiq_test.new_run('p1', 864000, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(11));
select ticketiq.fail_run(tiq_test.rid(11), 1, 'child failed');
-- parent 2 failed, its child 12 failed before it.
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.new_child(tiq_test.rid(2), 'deleg-2', 'c1', 8, tiq_test.rid(12));
select ticketiq.fail_run(tiq_test.rid(12), 1, 'child failed');
select ticketiq.fail_run(tiq_test.rid(2), 1, 'parent failed');

select tiq_test.advance(3600);
select is((select p.runs_purged from ticketiq.purge_history(60) as p), 1, 'first call: one run');
select results_eq(
    $$select r.run_id from ticketiq.runs as r order by r.run_id$$,
    $$values (tiq_test.rid(1)), (tiq_test.rid(2)), (tiq_test.rid(11))$$,
    'the finished parent''s child went; the parent (it had a child) and the running parent''s child stay'
);
select is((select p.runs_purged from ticketiq.purge_history(60) as p), 1, 'second call: one more');
select results_eq(
    $$select r.run_id from ticketiq.runs as r order by r.run_id$$,
    $$values (tiq_test.rid(1)), (tiq_test.rid(11))$$,
    'the finished parent went; the running parent''s child stays'
);
select is(
    (select d.run_id from ticketiq.delegation_status('deleg-1') as d), tiq_test.rid(11),
    'the running parent still finds its child by the delegation key'
);

select * from finish();
rollback;
