-- record_attempt: each call counts one failed attempt of its target at its
-- step and returns the count so far; the model step and each tool call
-- have counts of their own, and so does each step; the row keeps the
-- first and last times (the database clock) and the last error.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2));

select results_eq(
    $$select a.run_id, a.step, a.target, a.attempts
      from ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', 'HTTP 503') as a$$,
    $$values (tiq_test.rid(1), 1, 'model'::text, 1)$$,
    'the first failure of the model step: count 1'
);
select tiq_test.advance(2);
select is(
    (select a.attempts from ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', 'HTTP 529') as a), 2,
    'the second: count 2'
);
select is(
    (select a.attempts from ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'w1', 'timeout') as a), 1,
    'a tool call at the same step has a count of its own'
);
select is(
    (select a.attempts from ticketiq.record_attempt(tiq_test.rid(1), 1, 2, 'model', 'HTTP 503') as a), 1,
    'the model step at another step has a count of its own'
);
select is(
    (select a.attempts from ticketiq.record_attempt(tiq_test.rid(2), 1, 1, 'model', 'HTTP 503') as a), 1,
    'another run has counts of its own'
);
select tiq_test.advance(3);
select is(
    (select a.attempts from ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', 'HTTP 500') as a), 3,
    'the third failure of the model step at step 1: count 3'
);
select results_eq(
    $$select a.step, a.target, a.attempts, a.last_error, a.first_at, a.last_at
      from ticketiq.attempts as a where a.run_id = tiq_test.rid(1) order by a.step, a.target$$,
    $$values (1, 'model'::text, 3, 'HTTP 500'::text, '2030-01-01 00:00:00+00'::timestamptz,
              '2030-01-01 00:00:05+00'::timestamptz),
             (1, 'w1', 1, 'timeout', '2030-01-01 00:00:02+00', '2030-01-01 00:00:02+00'),
             (2, 'model', 1, 'HTTP 503', '2030-01-01 00:00:02+00', '2030-01-01 00:00:02+00')$$,
    'one row per step and target: its count, the last error, the first and last times'
);
select is(
    (select count(*)::integer from ticketiq.audit as a where a.event <> 'agent.run.started'), 0,
    'counting a failure writes no audit row'
);

select * from finish();
rollback;
