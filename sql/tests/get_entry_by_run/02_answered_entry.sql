-- get_entry_by_run: a claimed entry whose run handed its answer on is
-- answered, with the run's status and sealed answer.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select set_config('tiq_test.run', tiq_test.entry_run('task-1')::text, true);
select ticketiq.seal_answer(current_setting('tiq_test.run')::uuid, 1, 1, '{"text": "Done."}', 's', 'k1', 600);
select ticketiq.hand_on_answer(current_setting('tiq_test.run')::uuid, 1);

select results_eq(
    $$select g.run_id, g.state, g.run_status, g.answer
      from ticketiq.get_entry_by_run(current_setting('tiq_test.run')::uuid) as g$$,
    $$values (current_setting('tiq_test.run')::uuid, 'answered'::text, 'completed'::text,
              '{"text": "Done."}'::jsonb)$$,
    'answered, with the completed run and its answer'
);

select * from finish();
rollback;
