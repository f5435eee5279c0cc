-- record_attempt: the count is the run's, not the attempt's: after the run
-- is taken over (a crash in the middle of retrying), the new epoch records
-- again and the count goes on from where the lost attempt left it; the
-- first time stays the first failure's.  The lost attempt is fenced.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write', 'key-1')));
select ticketiq.record_attempt(tiq_test.rid(1), 1, 2, 'model', 'HTTP 503');
select ticketiq.record_attempt(tiq_test.rid(1), 1, 2, 'model', 'HTTP 503');
select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'w1', 'connection reset');

select is(tiq_test.take_over(tiq_test.rid(1), 'p2'), 3::bigint, 'the run is taken over at epoch 3');
select is(
    (select a.attempts from ticketiq.record_attempt(tiq_test.rid(1), 3, 2, 'model', 'HTTP 529') as a), 3,
    'the model step''s count goes on: 3'
);
select is(
    (select a.attempts from ticketiq.record_attempt(tiq_test.rid(1), 3, 1, 'w1', 'connection reset') as a), 2,
    'the tool call''s count goes on: 2'
);
select results_eq(
    $$select a.step, a.target, a.attempts, a.last_error, a.first_at
      from ticketiq.attempts as a where a.run_id = tiq_test.rid(1) order by a.step, a.target$$,
    $$values (1, 'w1'::text, 2, 'connection reset'::text, '2030-01-01 00:00:00+00'::timestamptz),
             (2, 'model', 3, 'HTTP 529', '2030-01-01 00:00:00+00')$$,
    'one row per step and target across the epochs, first_at from the first epoch'
);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 2, 'model', 'late')$$,
    'TQ002', null, 'the lost attempt (epoch 1) is fenced'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and counted nothing');

select * from finish();
rollback;
