-- wait_run: the caller's detail rides in the workflow.waiting audit row, but
-- its step_key, due_at, wait_key and step are the system's, whatever the
-- detail says (issue 46, finding 5).
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select ticketiq.wait_run(
    tiq_test.rid(1), 1, 'k1', 'timer:k1', 30,
    '{"step_key": "forged", "due_at": "1999-01-01", "wait_key": "forged", "step": 99, "call_id": "c1"}'
);

select results_eq(
    $$select a.detail ->> 'step_key', a.detail ->> 'wait_key', (a.detail ->> 'step')::integer,
          (a.detail ->> 'due_at')::timestamptz, a.detail ->> 'call_id'
      from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event = 'workflow.waiting'$$,
    $$values ('k1'::text, 'timer:k1'::text, 1, '2030-01-01 00:00:30+00'::timestamptz, 'c1'::text)$$,
    'the system''s fields, the caller''s own beside them'
);

select * from finish();
rollback;
