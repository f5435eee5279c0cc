-- hand_on_answer: marks the answer handed on and completes the run in one
-- statement (lease released, transcript told, agent.run.completed audited)
-- and returns the answer for the caller to deliver.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "Done."}', 'ans-seal', 'k2', 600);
select tiq_test.advance(1);

select results_eq(
    $$select h.run_id, h.step, h.body, h.seal, h.seal_key_id, h.handed_on_at
      from ticketiq.hand_on_answer(tiq_test.rid(1), 1) as h$$,
    $$values (tiq_test.rid(1), 2, '{"text": "Done."}'::jsonb, 'ans-seal'::text, 'k2'::text,
              '2030-01-01 00:00:01+00'::timestamptz)$$,
    'returns the sealed answer and when it was handed on'
);
select results_eq(
    $$select a.handed_on_at, a.handed_on_epoch from ticketiq.answers as a where a.run_id = tiq_test.rid(1)$$,
    $$values ('2030-01-01 00:00:01+00'::timestamptz, 1::bigint)$$,
    'the answer is marked handed on by epoch 1'
);
select results_eq(
    $$select r.status::text, r.lease_holder, r.lease_expires_at, r.finished_at
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('completed'::text, null::text, null::timestamptz, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'the run is completed and its lease released'
);
select results_eq(
    $$select t.kind, t.body from ticketiq.transcript_entries as t where t.run_id = tiq_test.rid(1)$$,
    $$values ('answer'::text, '{"step": 2, "answer": {"text": "Done."}}'::jsonb)$$,
    'one transcript entry of kind answer carries it'
);
select results_eq(
    $$select a.epoch, a.actor, (a.detail ->> 'step')::integer, (a.detail ->> 'loss_count')::integer
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.completed'$$,
    $$values (1::bigint, 'p1'::text, 2, 0)$$,
    'agent.run.completed audited'
);
select is(
    (select count(*) from ticketiq.runs_in_flight as rf where rf.run_id = tiq_test.rid(1)), 0::bigint,
    'no longer in flight'
);
select is_empty($$select 1 from ticketiq.sweep_lapsed('leader')$$, 'nothing for the sweep, whatever the clock');

select * from finish();
rollback;
