-- run_events_after: a run lost and adopted tells it in a resumed event at
-- the new epoch, naming the step whose text an earlier attempt may have
-- streamed (the last written step + 1) as void; a resume's settlement of
-- a call in doubt is a call_settled event of that epoch.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write', 'k-w1')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.take_over(tiq_test.rid(1));
select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "resent_same_key"}]');

select results_eq(
    $$select e.kind, e.epoch from ticketiq.run_events_after(tiq_test.rid(1)) as e
      where e.kind in ('resumed', 'call_settled')$$,
    $$values ('resumed'::text, 3::bigint), ('call_settled', 3)$$,
    'resumed at the new epoch, then the settlement'
);
select is(
    (select e.body -> 'discard' from ticketiq.run_events_after(tiq_test.rid(1)) as e where e.kind = 'resumed'),
    '{"step": 2, "epochs_before": 3}'::jsonb,
    'the text of step 2 from epochs before 3 is void'
);
select is(
    (select e.body ->> 'settlement' from ticketiq.run_events_after(tiq_test.rid(1)) as e
     where e.kind = 'call_settled'),
    'resent_same_key', 'the settlement by its route'
);

select * from finish();
rollback;
