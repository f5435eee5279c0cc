-- write_checkpoint: writing step n + 1 closes step n's open calls as done
-- (settlement made, outcome from body.outcomes), and leaves closed ones alone.
-- A read has no row: its outcome stays in the body only; the new step's
-- read gets no row either.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2');
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w2', '{"id": "JIRA-2"}', 'made');
select tiq_test.advance(2);

select ticketiq.write_checkpoint(
    tiq_test.rid(1), 1, 2,
    tiq_test.body(jsonb_build_array(tiq_test.call('n1', 'read'), tiq_test.call('n2', 'write')))
    || '{"outcomes": {"r1": {"rows": 3}, "w1": {"id": "JIRA-1"}}}',
    'seal-2', 'k1'
);

select results_eq(
    $$select c.call_id, c.state, c.settlement, c.outcome, c.finished_epoch
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 1 and c.call_id in ('r1', 'w1')
      order by c.ordinal$$,
    $$values ('w1'::text, 'done'::text, 'made'::text, '{"id": "JIRA-1"}'::jsonb, 1::bigint)$$,
    'the in-doubt write of step 1 is done, with its outcome from body.outcomes'
);
select is(
    tiq_test.call_rows(tiq_test.rid(1), 1), array['w1', 'w2'],
    'the read r1 of step 1 has no row; its outcome is kept in the body only'
);
select is(
    (
        select k.body -> 'outcomes' -> 'r1' from ticketiq.checkpoints as k
        where k.run_id = tiq_test.rid(1) and k.step = 2
    ),
    '{"rows": 3}'::jsonb,
    'the read''s outcome is in the step 2 checkpoint'
);
select is(
    (select c.finished_at from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'),
    '2030-01-01 00:00:02+00'::timestamptz,
    'finished_at is the database clock at the step 2 write'
);
select is(
    (select c.finished_at from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w2'),
    '2030-01-01 00:00:00+00'::timestamptz,
    'the call already done keeps its own finished_at'
);
select is(
    (select c.outcome from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w2'),
    '{"id": "JIRA-2"}'::jsonb,
    'and its recorded outcome'
);
select is(
    (select c.marked_classification from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'),
    'write',
    'the in-doubt mark is kept on the closed call'
);
select is(
    (select count(*) from ticketiq.calls_in_doubt as d where d.run_id = tiq_test.rid(1)), 0::bigint,
    'no call of the run is left in doubt'
);
select results_eq(
    $$select c.call_id, c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 2$$,
    $$values ('n2'::text, 'pending'::text)$$,
    'the new step''s changing call is pending; its read n1 has no row'
);

select * from finish();
rollback;
