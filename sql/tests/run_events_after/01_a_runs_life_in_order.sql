-- run_events_after: a run's life is its events, in the order it happened:
-- started, each written step with its text and calls, a changing call marked
-- (call_started) and its outcome (call_settled), the answer with its text.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('r1', 'read'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": 7}', 'made');
select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "done", "step": 2}', 'seal-a', 'k1', 60);

select results_eq(
    $$select e.kind, e.step from ticketiq.run_events_after(tiq_test.rid(1)) as e$$,
    $$values ('started'::text, 0), ('step_written', 1), ('call_started', 1), ('call_settled', 1),
        ('answer', 2)$$,
    'every change of the run is an event, in order'
);
select is(
    (select e.body from ticketiq.run_events_after(tiq_test.rid(1)) as e where e.kind = 'step_written'),
    '{"text": "help", "calls": [{"call_id": "w1", "tool": "tool_write", "classification": "write"},
      {"call_id": "r1", "tool": "tool_read", "classification": "read"}]}'::jsonb,
    'a written step tells its text and its calls (not their arguments)'
);
select is(
    (select e.body from ticketiq.run_events_after(tiq_test.rid(1)) as e where e.kind = 'call_settled'),
    '{"call_id": "w1", "tool": "tool_write", "settlement": "made", "outcome": {"id": 7}}'::jsonb,
    'a settled call tells its settlement and its outcome'
);
select is(
    (select e.body ->> 'text' from ticketiq.run_events_after(tiq_test.rid(1)) as e where e.kind = 'answer'),
    'done', 'the answer tells its text'
);

select * from finish();
rollback;
