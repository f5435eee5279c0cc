-- wait_run: a sleep not yet due sets its timer (due p_seconds from now by the
-- database clock) and suspends the run: epoch + 1, no lease, no loss,
-- workflow.waiting audited.  Nothing holds it: the sweep leaves it alone.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);

select results_eq(
    $$select w.outcome, w.due_at, w.epoch
      from ticketiq.wait_run(tiq_test.rid(1), 1, 'k-sleep-1', 'timer:r1:k-sleep-1', 30) as w$$,
    $$values ('suspended'::text, '2030-01-01 00:00:30+00'::timestamptz, 2::bigint)$$,
    'suspended at epoch 2 until 30 s from now'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.wait_key, r.lease_holder, r.loss_count::integer
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('suspended'::text, 2::bigint, 'timer:r1:k-sleep-1'::text, null::text, 0)$$,
    'suspended on the timer''s key, no lease, no loss'
);
select results_eq(
    $$select t.state, t.due_at, t.fired_at from ticketiq.workflow_timers as t
      where t.run_id = tiq_test.rid(1)$$,
    $$values ('set'::text, '2030-01-01 00:00:30+00'::timestamptz, null::timestamptz)$$,
    'one timer, set'
);
select is(
    (select a.detail ->> 'step_key' from ticketiq.audit as a
     where a.run_id = tiq_test.rid(1) and a.event = 'workflow.waiting'),
    'k-sleep-1', 'workflow.waiting audited with the step key'
);
select tiq_test.advance(3600);
select is_empty($$select 1 from ticketiq.sweep_lapsed('leader')$$, 'the sweep leaves it alone');

select * from finish();
rollback;
