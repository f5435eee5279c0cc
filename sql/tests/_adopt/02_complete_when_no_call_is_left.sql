-- _adopt: a resume whose last step left calls to settle opens incomplete
-- and tells the transcript nothing yet; one whose last step left none is
-- complete from the start and the transcript is told.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, '[{"call_id": "c1", "tool": "kb.search",
    "arguments": {}, "classification": "read"}]');
select tiq_test.checkpoint(tiq_test.rid(2), 1, 1);
select tiq_test.lose(tiq_test.rid(1));

select is(
    (select count(*) from ticketiq._adopt('w1', interval '8 seconds',
        array[tiq_test.rid(1), tiq_test.rid(2)])),
    2::bigint, 'both adopted'
);
select results_eq(
    $$select a.run_id, (a.detail ->> 'complete')::boolean from ticketiq.audit as a
      where a.event = 'agent.run.crash_resumed' order by a.run_id$$,
    $$values (tiq_test.rid(1), false), (tiq_test.rid(2), true)$$,
    'a call left: incomplete; none: complete'
);
select is_empty(
    $$select 1 from ticketiq.transcript_entries as t
      where t.run_id = tiq_test.rid(1) and t.kind = 'resumed'$$,
    'the transcript waits for its settlement'
);
select is(
    (select t.body from ticketiq.transcript_entries as t
     where t.run_id = tiq_test.rid(2) and t.kind = 'resumed'),
    '{"step": 1, "loss_count": 1, "settlements": []}'::jsonb, 'and is told of the other'
);

select * from finish();
rollback;
