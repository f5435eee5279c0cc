-- get_entry: the entry of a failed run is failed, with the run's failure
-- reason and the outcome {reason}, and no answer.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.fail_run(tiq_test.entry_run('task-1'), 1, 'owner no longer allowed');

select results_eq(
    $$select g.state, g.run_status, g.failure_reason, g.answer, g.outcome
      from ticketiq.get_entry('a2a', 'task-1') as g$$,
    $$values ('failed'::text, 'failed'::text, 'owner no longer allowed'::text, null::jsonb,
              '{"reason": "owner no longer allowed"}'::jsonb)$$,
    'failed, with the reason'
);

select * from finish();
rollback;
