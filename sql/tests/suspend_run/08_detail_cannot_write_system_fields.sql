-- suspend_run: the caller's detail rides in the agent.run.suspended audit
-- row, but its wait_key and step are the system's (issue 46, finding 5).
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1), true);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select ticketiq.suspend_run(
    tiq_test.rid(1), 1, 'reply:conv-1', '{"wait_key": "forged", "step": 99, "call_id": "c1"}'
);

select results_eq(
    $$select a.detail ->> 'wait_key', (a.detail ->> 'step')::integer, a.detail ->> 'call_id'
      from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.suspended'$$,
    $$values ('reply:conv-1'::text, 1, 'c1'::text)$$,
    'the system''s fields, the caller''s own beside them'
);

select * from finish();
rollback;
