-- release_run: p_outcomes records the results of the last step's calls the
-- process already has (done, made), so the adopter carries them on instead
-- of settling them as calls in doubt; other calls are left as they are.
-- A read has no calls row: an outcome given for it is not kept (the
-- adopter makes the read again, finding it in the checkpoint body).
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2');
select tiq_test.advance(1);
select ticketiq.release_run(
    tiq_test.rid(1), 1, 'shutdown', '{"r1": {"rows": 4}, "w1": {"id": "JIRA-1"}, "zz": {"ignored": true}}'
);

select results_eq(
    $$select c.call_id, c.state, c.settlement, c.outcome, c.finished_epoch
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) order by c.ordinal$$,
    $$values ('w1'::text, 'done'::text, 'made'::text, '{"id": "JIRA-1"}'::jsonb, 1::bigint),
             ('w2', 'in_doubt', null, null, null)$$,
    'the call with a known outcome is done; the one without stays in doubt'
);
select is(tiq_test.call_rows(tiq_test.rid(1), 1), array['w1', 'w2'], 'the read r1 has no row to keep it on');
select is(
    (select c.finished_at from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'),
    '2030-01-01 00:00:01+00'::timestamptz,
    'finished at the release'
);
select is(
    (select array_agg(d.call_id) from ticketiq.calls_in_doubt as d where d.run_id = tiq_test.rid(1)),
    array['w2'],
    'only w2 is left in doubt for the adopter'
);

create temp table adopted on commit drop as
select a.* from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a;

select is(
    (select jsonb_path_query_array(a.calls, '$[*] ? (@.state == "done").call_id') from adopted as a),
    '["w1"]'::jsonb,
    'the adopter sees the carried outcome as done'
);
select is(
    (select jsonb_path_query_array(a.checkpoint_body, '$.calls[*].call_id') from adopted as a),
    '["r1", "w1", "w2"]'::jsonb,
    'and finds the read in the checkpoint body, to make it again'
);

select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.release_run(tiq_test.rid(2), 1, 'shutdown', '[]')$$, 'TQ004', null, 'outcomes an array'
);
select throws_ok(
    $$select ticketiq.release_run(tiq_test.rid(2), 1, 'shutdown', null)$$, 'TQ004', null, 'outcomes null'
);

select * from finish();
rollback;
