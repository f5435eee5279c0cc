-- take_over_child: of a racing sweep and parent one claims the lapsed child:
-- when the sweep claimed it first, the take-over adopts the claimed child
-- (epoch 3) without counting the loss twice or claiming it again.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.advance(9);
select ticketiq.sweep_lapsed('leader');

select results_eq(
    $$select t.run_id, t.epoch, t.loss_count
      from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30) as t$$,
    $$values (tiq_test.rid(2), 3::bigint, 1)$$,
    'the swept child is adopted at epoch 3 with one loss'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder,
        r.loss_count::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('running'::text, 3::bigint, 'p1'::text, 1)$$,
    'held by the parent''s holder; the loss counted once'
);
select results_eq(
    $$select a.epoch, a.actor, a.detail ? 'taken_over_by_parent'
      from ticketiq.audit as a where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.lease_lapsed'$$,
    $$values (2::bigint, 'leader'::text, false)$$,
    'one lease_lapsed row: the sweep''s'
);
select results_eq(
    $$select a.epoch, a.actor
      from ticketiq.audit as a where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.adopted'$$,
    $$values (3::bigint, 'p1'::text)$$,
    'one adoption, by the parent''s holder'
);

select * from finish();
rollback;
