-- hand_on_answer: a child's hand-on wakes its parent suspended on it
-- (child:<run id>): claimed at epoch + 1, woken, audited; a parent waiting
-- on another child stays suspended.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 60, tiq_test.rid(11));
select ticketiq.suspend_run(tiq_test.rid(1), 1, 'child:' || tiq_test.rid(11)::text);
select tiq_test.new_run('p1', 60, tiq_test.rid(2), true);
select tiq_test.new_child(tiq_test.rid(2), 'deleg-2', 'c1', 60, tiq_test.rid(12));
select ticketiq.suspend_run(tiq_test.rid(2), 1, 'child:' || tiq_test.rid(12)::text);
select ticketiq.seal_answer(tiq_test.rid(11), 1, 1, '{"text": "found"}', 's', 'k1', 600);
select tiq_test.advance(1);
select ticketiq.hand_on_answer(tiq_test.rid(11), 1);

select results_eq(
    $$select r.status::text, r.epoch::bigint, r.wait_key, r.claim_reason, r.updated_at from ticketiq.runs as r
      where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 3::bigint, null::text, 'woken'::text, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'the parent is woken: claimed at epoch 3'
);
select results_eq(
    $$select a.detail ->> 'wait_key' from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.woken'$$,
    $$values ('child:' || tiq_test.rid(11)::text)$$,
    'agent.run.woken audited with the child''s key'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('suspended'::text, 2::bigint)$$,
    'the parent waiting on another child stays suspended'
);

select * from finish();
rollback;
