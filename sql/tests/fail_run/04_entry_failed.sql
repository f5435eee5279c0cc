-- fail_run: the failed run's entry is failed with the outcome {reason} at
-- the failure time; an entry's outcome is recorded once.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select set_config('tiq_test.run', tiq_test.entry_run('task-1')::text, true);
select tiq_test.advance(1);
select ticketiq.fail_run(current_setting('tiq_test.run')::uuid, 1, 'owner no longer allowed');

select results_eq(
    $$select e.state, e.outcome, e.finished_at from ticketiq.entries as e where e.sender_id = 'task-1'$$,
    $$values ('failed'::text, '{"reason": "owner no longer allowed"}'::jsonb,
              '2030-01-01 00:00:01+00'::timestamptz)$$,
    'the entry is failed with the reason'
);
select ticketiq._finish_entry(current_setting('tiq_test.run')::uuid, 'answered', '{}', '2030-01-01 00:00:02+00');
select results_eq(
    $$select e.state, e.finished_at from ticketiq.entries as e where e.sender_id = 'task-1'$$,
    $$values ('failed'::text, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'recorded once'
);

select * from finish();
rollback;
