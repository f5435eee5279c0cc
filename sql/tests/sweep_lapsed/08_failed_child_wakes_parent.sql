-- sweep_lapsed: a child run the sweep fails (not written ahead, or lost too
-- often) wakes its parent suspended on it (child:<run id>); a child the
-- sweep only claims (it will be resumed) leaves its parent waiting.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1), true);
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(11));
select ticketiq.suspend_run(tiq_test.rid(1), 1, 'child:' || tiq_test.rid(11)::text);
select tiq_test.new_run('p1', 600, tiq_test.rid(2), true);
select tiq_test.new_child(tiq_test.rid(2), 'deleg-2', 'c1', 20, tiq_test.rid(12));
select ticketiq.suspend_run(tiq_test.rid(2), 1, 'child:' || tiq_test.rid(12)::text);
select tiq_test.advance(9);
select ticketiq.sweep_lapsed('leader', 0);
select tiq_test.advance(12);
select ticketiq.sweep_lapsed('leader', 2);

select results_eq(
    $$select r.status::text, r.epoch::bigint, r.claim_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 3::bigint, 'woken'::text)$$,
    'the parent of the failed child is woken'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('suspended'::text, 2::bigint)$$,
    'the parent of the claimed child still waits'
);

select * from finish();
rollback;
