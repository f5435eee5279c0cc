-- record_outcome: a write marked in doubt and then made is done, with its
-- outcome, and leaves calls_in_doubt.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.advance(2);

create temp table recorded on commit drop as
select o.* from ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": "JIRA-9"}', 'made') as o;

select is((select o.state from recorded as o), 'done', 'returns state done');
select is((select o.settlement from recorded as o), 'made', 'settlement made');
select is((select o.replayed from recorded as o), false, 'not a replay');
select is(
    (select o.finished_at from recorded as o), '2030-01-01 00:00:02+00'::timestamptz,
    'finished_at is the database clock'
);
select results_eq(
    $$select c.state, c.settlement, c.outcome, c.finished_epoch, c.marked_classification
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'$$,
    $$values ('done'::text, 'made'::text, '{"id": "JIRA-9"}'::jsonb, 1::bigint, 'write'::text)$$,
    'the calls row is done with outcome, epoch and its mark kept'
);
select is(
    (select count(*) from ticketiq.calls_in_doubt as d where d.run_id = tiq_test.rid(1)), 0::bigint,
    'no longer in calls_in_doubt'
);
select is(
    (select o.state from ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": "JIRA-9"}') as o),
    'done',
    'settlement defaults to made'
);

select * from finish();
rollback;
