-- get_entry: once claimed the entry is running with its run's status; once
-- the run hands its answer on, the entry is answered with the sealed answer
-- as answer and outcome, and the time it finished.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select set_config('tiq_test.run', tiq_test.entry_run('task-1')::text, true);

select results_eq(
    $$select g.state, g.run_id, g.run_status, g.answer, g.finished_at from ticketiq.get_entry('a2a', 'task-1') as g$$,
    $$values ('running'::text, current_setting('tiq_test.run')::uuid, 'running'::text, null::jsonb,
              null::timestamptz)$$,
    'running with its run, no answer yet'
);

select ticketiq.seal_answer(current_setting('tiq_test.run')::uuid, 1, 1, '{"text": "Done."}', 's', 'k1', 600);
select tiq_test.advance(1);
select ticketiq.hand_on_answer(current_setting('tiq_test.run')::uuid, 1);

select results_eq(
    $$select g.state, g.run_status, g.failure_reason, g.answer, g.outcome, g.finished_at
      from ticketiq.get_entry('a2a', 'task-1') as g$$,
    $$values ('answered'::text, 'completed'::text, null::text, '{"text": "Done."}'::jsonb,
              '{"text": "Done."}'::jsonb, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'answered: the run completed, its answer and outcome, finished at the hand-on'
);

select * from finish();
rollback;
