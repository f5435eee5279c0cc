-- mark_in_doubt: a call the checkpoint recorded as a read has no calls row;
-- marked with p_classification 'write' (the tool is a write by now) its row
-- is created from the checkpoint body (ordinal, tool, arguments, the
-- recorded classification, step key) and marked in doubt in the same
-- statement.  Marking it again returns the first mark; the next checkpoint
-- closes it as a marked call (done, made); the other read still has no row.
begin;
select plan(10);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(
        tiq_test.call('w1', 'write'), tiq_test.call('r1', 'read', 'sk-r1'), tiq_test.call('r2', 'read')
    )
);
select tiq_test.advance(1);

select is(tiq_test.call_rows(tiq_test.rid(1), 1), array['w1'], 'before the mark only the write has a row');

create temp table marked on commit drop as
select m.* from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r1', 'write') as m;

select results_eq(
    $$select m.run_id, m.step, m.call_id, m.state, m.marked_classification, m.step_key, m.marked_at,
             m.already_marked, m.stop_requested
      from marked as m$$,
    $$values (tiq_test.rid(1), 1, 'r1'::text, 'in_doubt'::text, 'write'::text, 'sk-r1'::text,
              '2030-01-01 00:00:01+00'::timestamptz, false, false)$$,
    'returns the new mark: in doubt as a write, with the step key, first mark'
);
select results_eq(
    $$select c.ordinal, c.tool, c.arguments, c.classification, c.step_key, c.state, c.marked_classification,
             c.marked_at, c.marked_epoch, c.settlement, c.finished_at, c.approval_id
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 1 and c.call_id = 'r1'$$,
    $$values (2, 'tool_read'::text, '{"for": "r1"}'::jsonb, 'read'::text, 'sk-r1'::text, 'in_doubt'::text,
              'write'::text, '2030-01-01 00:00:01+00'::timestamptz, 1::bigint, null::text,
              null::timestamptz, null::uuid)$$,
    'the row is created from the checkpoint body and marked in doubt at the epoch'
);
select is(
    tiq_test.call_rows(tiq_test.rid(1), 1), array['w1', 'r1'],
    'the marked call has a row; the other read r2 still has none'
);
select results_eq(
    $$select d.call_id, d.marked_classification, d.step_key
      from ticketiq.calls_in_doubt as d where d.run_id = tiq_test.rid(1)$$,
    $$values ('r1'::text, 'write'::text, 'sk-r1'::text)$$,
    'calls_in_doubt shows it to operators'
);

select tiq_test.advance(1);
select tiq_test.save_fingerprint();
select results_eq(
    $$select m.state, m.marked_classification, m.marked_at, m.already_marked
      from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r1') as m$$,
    $$values ('in_doubt'::text, 'write'::text, '2030-01-01 00:00:01+00'::timestamptz, true)$$,
    'marking it again (no classification given) returns the first mark'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the second mark changed nothing');

select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": "JIRA-1"}', 'made');
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'r1');
select isnt(
    (select c.approval_id from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'r1'), null,
    'once marked as a write it can be held for approval'
);

select tiq_test.checkpoint(tiq_test.rid(1), 1, 2);
select results_eq(
    $$select c.call_id, c.state, c.settlement, c.finished_epoch
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 1 order by c.ordinal$$,
    $$values ('w1'::text, 'done'::text, 'made'::text, 1::bigint), ('r1', 'done', 'made', 1)$$,
    'the next checkpoint closes it as a marked call: done, made'
);
select is(
    tiq_test.call_rows(tiq_test.rid(1), 1), array['w1', 'r1'], 'r2, never marked, never got a row'
);

select * from finish();
rollback;
