-- sweep_lapsed: a run lost past max losses whose answer is sealed but not yet
-- handed on is claimed, not failed: a replacement hands that answer on and
-- runs nothing (I10).  (A run with no sealed answer is failed: 03_third_loss_fails.)
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select tiq_test.take_over(tiq_test.rid(1), 'p3');
select ticketiq.seal_answer(
    tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 2, '{"text": "done"}', 'answer-seal', 'k2', 3600
);

select tiq_test.advance(9);
create temp table swept on commit drop as
select s.* from ticketiq.sweep_lapsed('leader-a') as s;

select results_eq(
    $$select s.run_id, s.loss_count, s.status from swept as s$$,
    $$values (tiq_test.rid(1), 3, 'claimed'::text)$$,
    'the third loss claims the run with a sealed answer instead of failing it'
);
select is(
    (select r.failure_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), null,
    'the run with a sealed answer has no failure reason'
);

create temp table adopted on commit drop as
select a.* from ticketiq.adopt_run('p4', 8, tiq_test.rid(1)) as a;
select is((select a.answer_body from adopted as a), '{"text": "done"}'::jsonb,
    'the replacement adopts it with its sealed answer');
select is(
    (select h.body from ticketiq.hand_on_answer(tiq_test.rid(1), (select a.epoch from adopted as a)) as h),
    '{"text": "done"}'::jsonb,
    'and hands it on'
);
select is((select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'completed',
    'the run is completed');
select is(
    (select count(*)::integer from ticketiq.audit as a
     where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.failed'), 0,
    'no failure is audited for it'
);

select * from finish();
rollback;
