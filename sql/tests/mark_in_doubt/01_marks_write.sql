-- mark_in_doubt: a changing call of the last step is marked in doubt, with
-- the classification that will decide its settlement (I5, I7).
begin;
select plan(10);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write', 'step-key-1')));
select tiq_test.advance(1);

create temp table marked on commit drop as
select m.* from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1') as m;

select is((select m.state from marked as m), 'in_doubt', 'returns state in_doubt');
select is((select m.marked_classification from marked as m), 'write', 'marked as a write');
select is((select m.step_key from marked as m), 'step-key-1', 'returns the step key');
select is(
    (select m.marked_at from marked as m), '2030-01-01 00:00:01+00'::timestamptz,
    'marked_at is the database clock'
);
select is((select m.already_marked from marked as m), false, 'first mark');
select is((select m.stop_requested from marked as m), false, 'no stop requested');
select results_eq(
    $$select c.state, c.marked_classification, c.marked_at, c.marked_epoch, c.finished_at
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'$$,
    $$values ('in_doubt'::text, 'write'::text, '2030-01-01 00:00:01+00'::timestamptz, 1::bigint, null::timestamptz)$$,
    'the calls row is in doubt with its mark and the marking epoch'
);
select results_eq(
    $$select d.call_id, d.marked_classification, d.step_key, d.run_status, d.lease_holder
      from ticketiq.calls_in_doubt as d where d.run_id = tiq_test.rid(1)$$,
    $$values ('w1'::text, 'write'::text, 'step-key-1'::text, 'running'::text, 'p1'::text)$$,
    'calls_in_doubt shows it to operators'
);

select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 2,
    jsonb_build_array(tiq_test.call('d1', 'delegation'), tiq_test.call('s1', 'subagent_with_tools'))
);
select is(
    (select m.marked_classification from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'd1') as m),
    'delegation', 'a delegation is marked as a delegation'
);
select is(
    (select m.marked_classification from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 's1') as m),
    'subagent_with_tools', 'a sub-agent with tools is marked as such'
);

select * from finish();
rollback;
