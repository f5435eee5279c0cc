-- seal_answer: a run not written ahead (durable false) writes no
-- checkpoints, so its answer may be sealed at any later step; a step not
-- after its last one is still refused (TQ007).  A durable run stays bound
-- to last step + 1.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), false, false);
select tiq_test.new_run('p1', 8, tiq_test.rid(2));

select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 0, '{}', 's', 'k', 60)$$, 'TQ007', null,
    'step 0 (not after the last step)'
);
select results_eq(
    $$select s.step, s.replayed from ticketiq.seal_answer(tiq_test.rid(1), 1, 5, '{"text": "ok"}', 's', 'k', 60) as s$$,
    $$values (5, false)$$,
    'the run not written ahead seals at step 5'
);
select is(
    (select r.last_step::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 5,
    'its last step is 5'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(2), 1, 5, '{}', 's', 'k', 60)$$, 'TQ007', null,
    'a durable run may not skip steps'
);

select * from finish();
rollback;
