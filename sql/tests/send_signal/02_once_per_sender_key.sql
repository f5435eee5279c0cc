-- send_signal: a sender that repeats its request (same run, name, sender key
-- and payload) gets its first delivery back: stored once, woken once (the
-- same key with another payload: 05_same_key_other_payload_refused.sql).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'signal:00000000-0000-0000-0000-000000000001:ack');
select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 'msg-1');

select results_eq(
    $$select s.signal_id, s.created, s.woken
      from ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 'msg-1') as s$$,
    $$select s.signal_id, false, 0 from ticketiq.workflow_signals as s$$,
    'the first delivery, not created again'
);
select results_eq(
    $$select s.payload from ticketiq.workflow_signals as s$$, $$values ('{"n": 1}'::jsonb)$$,
    'one signal stored'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event in ('workflow.signal_sent', 'agent.run.woken')),
    2::bigint, 'sent and woken once each'
);

select * from finish();
rollback;
