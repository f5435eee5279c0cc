-- record_resume: a call an earlier attempt already finished (its outcome
-- recorded before the process died) keeps its record unchanged, whatever
-- settlement the resume names for it; the calls still open are settled.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2');
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": "JIRA-1"}', 'made');
select tiq_test.take_over(tiq_test.rid(1), 'p2');

select lives_ok(
    $$select ticketiq.record_resume(
        tiq_test.rid(1), 3,
        '[{"call_id": "w1", "settlement": "unknown"}, {"call_id": "w2", "settlement": "read_back",
          "outcome": {"id": "JIRA-2"}}]'
    )$$,
    'the resume names both calls'
);
select results_eq(
    $$select c.call_id, c.state, c.settlement, c.outcome, c.finished_epoch, c.finished_at
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) order by c.ordinal$$,
    $$values ('w1'::text, 'done'::text, 'made'::text, '{"id": "JIRA-1"}'::jsonb, 1::bigint,
              '2030-01-01 00:00:00+00'::timestamptz),
             ('w2', 'settled', 'read_back', '{"id": "JIRA-2"}', 3, '2030-01-01 00:00:09+00')$$,
    'w1 keeps the record of epoch 1; w2 is settled at epoch 3'
);
select is(
    (
        select a.detail -> 'settlements' -> 0 ->> 'settlement' from ticketiq.audit as a
        where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.crash_resumed'
    ),
    'unknown',
    'the audit row keeps the settlements as the resume named them'
);

select * from finish();
rollback;
