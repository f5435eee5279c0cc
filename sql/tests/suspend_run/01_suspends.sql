-- suspend_run: a run that may wait gives its lease up until its event:
-- suspended at epoch + 1 on the wait key, lease cleared, no loss counted,
-- agent.run.suspended audited with the key, the step and the detail.  The
-- sweep and adoption leave it alone, however late it is.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.advance(1);

select results_eq(
    $$select s.run_id, s.status, s.epoch
      from ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1', '{"call_id": "ask-1"}') as s$$,
    $$values (tiq_test.rid(1), 'suspended'::text, 2::bigint)$$,
    'returns the run suspended at epoch 2'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.wait_key, r.lease_holder, r.lease_expires_at,
        r.loss_count::integer, r.finished_at,
             r.updated_at
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('suspended'::text, 2::bigint, 'reply:conv-1'::text, null::text, null::timestamptz, 0,
              null::timestamptz, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'suspended on its wait key, lease released, no loss'
);
select results_eq(
    $$select a.epoch, a.actor, a.detail from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.suspended'$$,
    $$values (2::bigint, 'p1'::text, '{"wait_key": "reply:conv-1", "step": 1, "call_id": "ask-1"}'::jsonb)$$,
    'agent.run.suspended audited at epoch 2 with the key, the step and the detail'
);
select is(
    (select count(*) from ticketiq.runs_in_flight as rf where rf.run_id = tiq_test.rid(1)), 0::bigint,
    'not in flight'
);
select tiq_test.advance(3600);
select is_empty($$select 1 from ticketiq.sweep_lapsed('leader')$$, 'the sweep leaves it alone');
select is_empty($$select 1 from ticketiq.adopt_run('p2', 8)$$, 'nothing to adopt');
select is(tiq_test.epoch(tiq_test.rid(1)), 2::bigint, 'still at epoch 2');

select * from finish();
rollback;
