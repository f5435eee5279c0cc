-- record_resume: a call the lost attempt made and recorded is audited
-- 'already_made' (not sent again), told apart from a call this resume made
-- ('made'); the finished call keeps its record ('done', 'made', its epoch).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": "JIRA-1"}', 'made');
select tiq_test.take_over(tiq_test.rid(1), 'p2');

select lives_ok(
    $$select ticketiq.record_resume(
        tiq_test.rid(1), 3,
        '[{"call_id": "w1", "settlement": "already_made", "outcome": {"id": "JIRA-1"}},
          {"call_id": "w2", "settlement": "made", "outcome": {"id": "JIRA-2"}}]'
    )$$,
    'already_made is a settlement'
);
select results_eq(
    $$select c.call_id, c.state, c.settlement, c.finished_epoch
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'$$,
    $$values ('w1'::text, 'done'::text, 'made'::text, 1::bigint)$$,
    'the call the lost attempt made keeps its record'
);
select is(
    (
        select jsonb_agg(s ->> 'settlement' order by s ->> 'call_id') from ticketiq.audit as a
        cross join lateral jsonb_array_elements(a.detail -> 'settlements') as s
        where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.crash_resumed'
    ),
    '["already_made", "made"]'::jsonb,
    'the audit tells the call made before the loss from the one the resume made'
);

select * from finish();
rollback;
