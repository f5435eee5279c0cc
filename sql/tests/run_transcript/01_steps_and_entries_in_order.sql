-- run_transcript: what a person reads of a run: each written step (from
-- its checkpoint: the model's last text and every call it asked for, in
-- order, with its classification, and the state and settlement of its
-- calls row; a read has no row, so both are null) and each transcript
-- entry (resumed, answer), merged in time order.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.advance(1);
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 2, jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'w1');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select ticketiq.record_resume(
    tiq_test.rid(1), 3,
    '[{"call_id": "r1", "settlement": "redone"}, {"call_id": "w1", "settlement": "unknown"}]'
);
select tiq_test.advance(1);
select tiq_test.checkpoint(tiq_test.rid(1), 3, 3);
select tiq_test.advance(1);
select ticketiq.seal_answer(tiq_test.rid(1), 3, 4, '{"text": "Done."}', 's', 'k1', 600);
select ticketiq.hand_on_answer(tiq_test.rid(1), 3);

select results_eq(
    $$select t.at, t.kind, t.step from ticketiq.run_transcript(tiq_test.rid(1)) as t$$,
    $$values ('2030-01-01 00:00:00+00'::timestamptz, 'step'::text, 1),
             ('2030-01-01 00:00:01+00', 'step', 2),
             ('2030-01-01 00:00:09+00', 'resumed', 2),
             ('2030-01-01 00:00:10+00', 'step', 3),
             ('2030-01-01 00:00:11+00', 'answer', 4)$$,
    'steps 1 and 2, the resume, step 3 and the answer, in time order'
);
select is(
    (select t.body from ticketiq.run_transcript(tiq_test.rid(1)) as t where t.kind = 'step' and t.step = 2),
    jsonb_build_object(
        'text', 'help',
        'calls', jsonb_build_array(
            jsonb_build_object(
                'call_id', 'r1', 'tool', 'tool_read', 'classification', 'read', 'state', null, 'settlement', null
            ),
            jsonb_build_object(
                'call_id', 'w1', 'tool', 'tool_write', 'classification', 'write', 'state', 'settled',
                'settlement', 'unknown'
            )
        )
    ),
    'a step shows the model''s text and every call in order: the read with no state, the write settled'
);
select is(
    (select t.body -> 'calls' from ticketiq.run_transcript(tiq_test.rid(1)) as t where t.kind = 'step' and t.step = 3),
    '[]'::jsonb,
    'a step with no calls shows an empty array'
);
select is(
    (
        select t.body -> 'settlements' -> 0 from ticketiq.run_transcript(tiq_test.rid(1)) as t
        where t.kind = 'resumed'
    ),
    '{"call_id": "r1", "settlement": "redone"}'::jsonb,
    'the resumed entry carries the read''s settlement'
);
select is(
    (select t.body -> 'answer' from ticketiq.run_transcript(tiq_test.rid(1)) as t where t.kind = 'answer'),
    '{"text": "Done."}'::jsonb,
    'the answer entry carries the answer'
);

select * from finish();
rollback;
