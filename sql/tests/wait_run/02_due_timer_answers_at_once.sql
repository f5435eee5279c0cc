-- wait_run: a timer due answers 'due' at once and fires it, the run still
-- running; a second call of the same step (a resume) keeps the due time the
-- first call set, so a resumed sleep never starts again.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);

select results_eq(
    $$select w.outcome, w.epoch from ticketiq.wait_run(tiq_test.rid(1), 1, 'k0', 'timer:r1:k0', 0) as w$$,
    $$values ('due'::text, 1::bigint)$$,
    'zero seconds: due at once, still epoch 1'
);
select is(
    (select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'running',
    'not suspended'
);
-- a first attempt set a 30 s timer and was lost; its resume 40 s later asks for 30 s again
insert into ticketiq.workflow_timers (run_id, timer_key, wait_key, due_at, set_at)
values (tiq_test.rid(1), 'k1', 'timer:r1:k1', '2030-01-01 00:00:30+00', '2030-01-01 00:00:00+00');
select tiq_test.advance(40);
select results_eq(
    $$select w.outcome, w.due_at from ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'timer:r1:k1', 30) as w$$,
    $$values ('due'::text, '2030-01-01 00:00:30+00'::timestamptz)$$,
    'the first attempt''s due time, not 30 s from the resume'
);
select results_eq(
    $$select t.timer_key, t.state, t.fired_at from ticketiq.workflow_timers as t
      where t.run_id = tiq_test.rid(1) order by t.timer_key$$,
    $$values ('k0'::text, 'fired'::text, '2030-01-01 00:00:00+00'::timestamptz),
             ('k1', 'fired', '2030-01-01 00:00:40+00')$$,
    'both timers fired once'
);

select * from finish();
rollback;
