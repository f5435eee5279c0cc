-- stop_run: the stopped run's entry is stopped with the outcome {reason}
-- at the stop time.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select set_config('tiq_test.run', tiq_test.entry_run('task-1')::text, true);
select ticketiq.request_stop(current_setting('tiq_test.run')::uuid, 'alice@example.com');
select tiq_test.advance(1);
select ticketiq.stop_run(current_setting('tiq_test.run')::uuid, 1, 'Stop by alice');

select results_eq(
    $$select e.state, e.outcome, e.finished_at from ticketiq.entries as e where e.sender_id = 'task-1'$$,
    $$values ('stopped'::text, '{"reason": "Stop by alice"}'::jsonb, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'the entry is stopped with the reason'
);

select * from finish();
rollback;
