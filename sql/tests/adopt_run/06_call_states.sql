-- adopt_run: calls lists each changing call of the last step as the
-- database recorded it (state, classification, mark, step key, settlement,
-- outcome), in order, so the resume settles what the step left (I6, I7).
-- A read has no row and is not in calls (it is made again on resume): the
-- resume finds it in the checkpoint body, which lists every call.  A call
-- recorded as a read but marked as a write has a row and is listed.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(
        tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write', 'sk-w1'), tiq_test.call('r2', 'read'),
        tiq_test.call('w2', 'write')
    )
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r2', 'write');
select tiq_test.lose(tiq_test.rid(1));

create temp table adopted on commit drop as
select a.* from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a;

select is(
    (select jsonb_agg(e.value - 'tool' - 'arguments' - 'seal' - 'seal_key_id' order by e.ordinality)
        from adopted as a cross join jsonb_array_elements(a.calls) with ordinality as e),
    '[{"call_id": "w1", "state": "in_doubt", "classification": "write", "marked_classification": "write",
       "step_key": "sk-w1", "settlement": null, "outcome": null, "approval_id": null, "approval_keyed": false},
      {"call_id": "r2", "state": "in_doubt", "classification": "read", "marked_classification": "write",
       "step_key": null, "settlement": null, "outcome": null, "approval_id": null, "approval_keyed": false},
      {"call_id": "w2", "state": "pending", "classification": "write", "marked_classification": null,
       "step_key": null, "settlement": null, "outcome": null, "approval_id": null, "approval_keyed": false}]'::jsonb,
    'each call with a row as recorded, in the step''s order; the read marked as a write carries its mark'
);
select is(
    (select jsonb_agg(jsonb_build_array(e.value -> 'tool', e.value -> 'arguments', e.value -> 'seal'))
        from adopted as a cross join jsonb_array_elements(a.calls) as e),
    '[["tool_write", {"for": "w1"}, null], ["tool_read", {"for": "r2"}, null],
      ["tool_write", {"for": "w2"}, null]]'::jsonb,
    'each row with its tool and arguments (held against its checkpoint on resume) and its seal (none here)'
);
select is(
    (select jsonb_path_query_array(a.calls, '$[*] ? (@.call_id == "r1")') from adopted as a), '[]'::jsonb,
    'the read r1 has no row and is not in calls'
);
select is(
    (select jsonb_path_query_array(a.checkpoint_body, '$.calls[*].call_id') from adopted as a),
    '["r1", "w1", "r2", "w2"]'::jsonb,
    'the checkpoint body lists every call, the read included'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.lose(tiq_test.rid(2));
select is(
    (select a.calls from ticketiq.adopt_run('p2', 8, tiq_test.rid(2)) as a), '[]'::jsonb,
    'a run lost before its first step: no calls, an empty array'
);

select * from finish();
rollback;
