-- fail_run: a failed child wakes its parent suspended on it.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 60, tiq_test.rid(11));
select ticketiq.suspend_run(tiq_test.rid(1), 1, 'child:' || tiq_test.rid(11)::text);
select ticketiq.fail_run(tiq_test.rid(11), 1, 'tool broken');

select results_eq(
    $$select r.status::text, r.epoch::bigint, r.claim_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 3::bigint, 'woken'::text)$$,
    'the parent is woken'
);

select * from finish();
rollback;
