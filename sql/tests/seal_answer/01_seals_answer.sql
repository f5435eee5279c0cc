-- seal_answer: the answer is step last_step + 1, stored with the caller's
-- seal until the retention time; the previous step's calls are closed and
-- the run keeps its lease until the hand-on.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.advance(2);

create temp table sealed on commit drop as
select s.* from ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "Ticket closed."}', 'ans-seal', 'k2', 600) as s;

select results_eq(
    $$select s.run_id, s.step, s.sealed_at, s.retain_until, s.replayed from sealed as s$$,
    $$values (
        tiq_test.rid(1), 2, '2030-01-01 00:00:02+00'::timestamptz, '2030-01-01 00:10:02+00'::timestamptz, false
    )$$,
    'returns the step, sealed_at now and retain_until now + retention'
);
select results_eq(
    $$select a.step, a.epoch, a.body, a.seal, a.seal_key_id, a.handed_on_at
      from ticketiq.answers as a where a.run_id = tiq_test.rid(1)$$,
    $$values (2, 1::bigint, '{"text": "Ticket closed."}'::jsonb, 'ans-seal'::text, 'k2'::text, null::timestamptz)$$,
    'the answer is stored with its seal, not handed on'
);
select is((select r.last_step::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 2, 'last_step is 2');
select results_eq(
    $$select r.status::text, r.lease_holder,
        r.lease_expires_at from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('running'::text, 'p1'::text, '2030-01-01 00:00:08+00'::timestamptz)$$,
    'the run keeps running with its lease until the hand-on'
);
select results_eq(
    $$select c.state, c.settlement, c.finished_epoch from ticketiq.calls as c where c.run_id = tiq_test.rid(1)$$,
    $$values ('done'::text, 'made'::text, 1::bigint)$$,
    'the previous step''s in-doubt call is closed as done'
);
select results_eq(
    $$select a.epoch, a.actor, (a.detail ->> 'step')::integer, a.detail ->> 'seal_key_id'
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.answer_sealed'$$,
    $$values (1::bigint, 'p1'::text, 2, 'k2'::text)$$,
    'agent.run.answer_sealed audited'
);
select is(
    (select count(*) from ticketiq.checkpoints as c where c.run_id = tiq_test.rid(1)), 1::bigint,
    'no checkpoint is written for the answer step'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select is(
    (select s.step from ticketiq.seal_answer(tiq_test.rid(2), 1, 1, '"plain text"', 's', 'k2', 60) as s), 1,
    'a run that answers at once seals step 1'
);
select is(
    (select a.body from ticketiq.answers as a where a.run_id = tiq_test.rid(2)), '"plain text"'::jsonb,
    'any JSON answer is kept'
);

select * from finish();
rollback;
