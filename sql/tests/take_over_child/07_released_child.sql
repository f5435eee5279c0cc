-- take_over_child: a child released by its process (claimed without a
-- loss) is adopted by the parent's holder: epoch + 1, no loss counted.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select ticketiq.release_run(tiq_test.rid(2), 1, 'shutdown');

select results_eq(
    $$select t.run_id, t.epoch, t.loss_count
      from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30) as t$$,
    $$values (tiq_test.rid(2), 3::bigint, 0)$$,
    'the released child is adopted at epoch 3, no loss'
);
select is(
    (select count(*) from ticketiq.audit as a where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.lease_lapsed'),
    0::bigint,
    'no lapse audited'
);

select * from finish();
rollback;
