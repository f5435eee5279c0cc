-- record_resume: the adopter records how each call the last step left was
-- settled and writes the one agent.run.crash_resumed audit row of this
-- resume (I14), with the step and loss count; the transcript is told.
-- A read of the last step is a known call (the checkpoint lists it) but has
-- no row: its settlement lives in the audit row only.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 2,
    jsonb_build_array(
        tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write', 'inc-key'),
        tiq_test.call('w3', 'write')
    )
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'w1');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'w2');
select tiq_test.take_over(tiq_test.rid(1), 'p2');

create temp table resumed on commit drop as
select r.*
from ticketiq.record_resume(
    tiq_test.rid(1), 3,
    '[{"call_id": "r1", "settlement": "redone", "outcome": {"rows": 1}},
      {"call_id": "w1", "settlement": "unknown"},
      {"call_id": "w2", "settlement": "resent_same_key", "outcome": {"id": "INC-1"}},
      {"call_id": "w3", "settlement": "made", "outcome": {"id": "JIRA-3"}}]'
) as r;

select results_eq(
    $$select r.run_id, r.step, r.loss_count, r.audit_id is not null from resumed as r$$,
    $$values (tiq_test.rid(1), 2, 1, true)$$,
    'returns the step, the loss count and the audit row'
);
select results_eq(
    $$select c.call_id, c.state, c.settlement, c.outcome, c.finished_epoch
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 2 order by c.ordinal$$,
    $$values ('w1'::text, 'settled'::text, 'unknown'::text, null::jsonb, 3::bigint),
             ('w2', 'settled', 'resent_same_key', '{"id": "INC-1"}', 3),
             ('w3', 'done', 'made', '{"id": "JIRA-3"}', 3)$$,
    'each settlement is recorded on its call (made leaves it done)'
);
select is(tiq_test.call_rows(tiq_test.rid(1), 2), array['w1', 'w2', 'w3'], 'the read r1 has no row');
select is(
    (
        select a.detail -> 'settlements' -> 0 from ticketiq.audit as a
        where a.audit_id = (select r.audit_id from resumed as r)
    ),
    '{"call_id": "r1", "settlement": "redone", "outcome": {"rows": 1}}'::jsonb,
    'the read''s settlement is in the audit row'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, (a.detail ->> 'step')::integer, (a.detail ->> 'loss_count')::integer,
             jsonb_array_length(a.detail -> 'settlements')
      from ticketiq.audit as a where a.audit_id = (select r.audit_id from resumed as r)$$,
    $$values ('agent.run.crash_resumed'::text, 3::bigint, 'p2'::text, 2, 1, 4)$$,
    'one agent.run.crash_resumed row: step, loss count, settlements'
);
select results_eq(
    $$select v.epoch, v.step, v.loss_count, v.settlements -> 1 ->> 'settlement'
      from ticketiq.resume_audit as v where v.run_id = tiq_test.rid(1)$$,
    $$values (3::bigint, 2, 1, 'unknown'::text)$$,
    'resume_audit shows it to operators'
);
select results_eq(
    $$select t.kind, (t.body ->> 'step')::integer, (t.body ->> 'loss_count')::integer
      from ticketiq.transcript_entries as t where t.run_id = tiq_test.rid(1)$$,
    $$values ('resumed'::text, 2, 1)$$,
    'the transcript is told'
);
select is(
    (select count(*) from ticketiq.calls_in_doubt as d where d.run_id = tiq_test.rid(1)), 0::bigint,
    'nothing left in doubt'
);
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.take_over(tiq_test.rid(2), 'p2');
select is(
    (select r.step from ticketiq.record_resume(tiq_test.rid(2), 3, '[]') as r), 0,
    'a run lost before its first step: recorded at step 0 with no settlements'
);

select * from finish();
rollback;
