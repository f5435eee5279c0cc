-- start_run: a parent that asks again with the same delegation key finds
-- the same child (created = false, epoch null): no second child is started.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.advance(2);
select tiq_test.save_fingerprint();

select results_eq(
    $$select s.run_id, s.created, s.epoch
      from ticketiq.start_run('c2', 'o', 'ra', 'delegation', 'delegation', false, 8, '{}', null, 'deleg-1', '{}',
          null, tiq_test.rid(1)) as s$$,
    $$values (tiq_test.rid(2), false, null::bigint)$$,
    'the same child, not created, no epoch for the caller'
);
select is(
    (select count(*) from ticketiq.runs as r where r.parent_run_id = tiq_test.rid(1)), 1::bigint,
    'one child'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
