-- wait_run: a step key's timer is bound to the wait it was set for (issue 46,
-- finding 4).  The step woken before its timer was due and waiting again
-- under another wait key would be suspended on a key its timer never wakes:
-- TQ007, nothing changed; waiting again under its own key keeps the timer.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'timer:r1:a', 30);
select ticketiq.wake_runs('timer:r1:a');
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    format($$select ticketiq.wait_run(%L, 4, 'k1', 'timer:r1:b', 30)$$, tiq_test.rid(1)),
    'TQ007', null, 'the step key''s timer wakes timer:r1:a: waiting on timer:r1:b is a conflict'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select results_eq(
    format($$select w.outcome, w.due_at from ticketiq.wait_run(%L, 4, 'k1', 'timer:r1:a', 30) as w$$,
        tiq_test.rid(1)),
    $$values ('suspended'::text, '2030-01-01 00:00:30+00'::timestamptz)$$,
    'under its own key: suspended until the timer first set'
);

select * from finish();
rollback;
