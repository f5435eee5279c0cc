-- wait_run: a signal waiting is consumed by the step that waits for it, oldest
-- first; the same step asking again (a retry, a resume) gets the same signal,
-- and another step gets the next one: each signal consumed once.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 's1');
select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 2}', 's2');

select results_eq(
    $$select w.outcome, w.payload
      from ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'signal:00000000-0000-0000-0000-000000000001:ack') as w$$,
    $$values ('signal'::text, '{"n": 1}'::jsonb)$$, 'the oldest signal'
);
select results_eq(
    $$select w.outcome, w.payload
      from ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'signal:00000000-0000-0000-0000-000000000001:ack') as w$$,
    $$values ('signal'::text, '{"n": 1}'::jsonb)$$, 'the same step again: the same signal'
);
select results_eq(
    $$select w.outcome, w.payload
      from ticketiq.wait_run(tiq_test.rid(1), 1, 'k2', 'signal:00000000-0000-0000-0000-000000000001:ack') as w$$,
    $$values ('signal'::text, '{"n": 2}'::jsonb)$$, 'the next step: the next signal'
);
select results_eq(
    $$select s.sender_key, s.consumed_by from ticketiq.workflow_signals as s order by s.signal_id$$,
    $$values ('s1'::text, 'k1'::text), ('s2', 'k2')$$, 'each consumed once, by its step'
);

select * from finish();
rollback;
