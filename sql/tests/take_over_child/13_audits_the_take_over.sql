-- take_over_child: a child taken over by its parent is audited
-- agent.run.taken_over at the child's new epoch, naming the parent and the
-- parent's epoch, so anyone can tell a parent's take-over from a worker's
-- adoption.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.advance(9);
select ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30);

select results_eq(
    $$select a.epoch, a.actor, a.detail from ticketiq.audit as a
      where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.taken_over'$$,
    format($$values (3::bigint, 'p1'::text, '{"parent_run_id": "%s", "parent_epoch": 1}'::jsonb)$$,
           tiq_test.rid(1)),
    'audited at the child''s epoch 3, with the parent and its epoch'
);
select is_empty(
    $$select 1 from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.taken_over'$$,
    'the parent has no such row'
);

select * from finish();
rollback;
