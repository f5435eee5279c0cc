-- record_resume: a resume is audited from the moment it begins (I14; issue
-- 20.4): adopt_run writes its crash_resumed row with the step, the loss
-- count and no settlements, not complete, before any call is settled; the
-- transcript is told only once every call is settled.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('r1', 'read'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.take_over(tiq_test.rid(1), 'p2');

select results_eq(
    $$select a.event, a.epoch, a.actor, (a.detail ->> 'step')::integer, (a.detail ->> 'loss_count')::integer,
             a.detail -> 'settlements', (a.detail ->> 'complete')::boolean
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event like 'agent.run.%resumed'$$,
    $$values ('agent.run.crash_resumed'::text, 3::bigint, 'p2'::text, 1, 1, '[]'::jsonb, false)$$,
    'the adoption wrote the resume''s row: step 1, lost once, nothing settled yet'
);
select is(
    (select count(*)::integer from ticketiq.transcript_entries as t
     where t.run_id = tiq_test.rid(1) and t.kind = 'resumed'),
    0, 'the transcript is not told of a resume still settling'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.take_over(tiq_test.rid(2), 'p2');
select results_eq(
    $$select (a.detail ->> 'complete')::boolean, (select count(*)::integer from ticketiq.transcript_entries as t
              where t.run_id = tiq_test.rid(2) and t.kind = 'resumed')
      from ticketiq.audit as a where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.crash_resumed'$$,
    $$values (true, 1)$$,
    'a run lost before its first step has nothing to settle: complete at adoption'
);

select * from finish();
rollback;
