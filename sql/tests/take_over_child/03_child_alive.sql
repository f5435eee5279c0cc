-- take_over_child: a child that is alive with its holder is not taken over:
-- no row, and nothing changes (its epoch, holder and lease stay).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.advance(7);
select tiq_test.save_fingerprint();

select is_empty(
    $$select 1 from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30)$$,
    'no row: the child is alive with c1'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder,
        r.loss_count::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('running'::text, 1::bigint, 'c1'::text, 0)$$,
    'the child keeps its epoch and holder; no loss counted'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
