-- record_resume: the settlements join the resume's row one by one as they
-- are decided, each recorded on its call at once, so a resumer that dies
-- between two leaves a row naming what it settled and the calls it settled
-- are no longer in doubt; the last one makes the row complete.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(tiq_test.call('w1', 'write', 'inc-key'), tiq_test.call('w2', 'write'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select ticketiq.record_resume(
    tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "resent_same_key", "outcome": {"id": "INC-1"}}]'
);

select results_eq(
    $$select jsonb_array_length(a.detail -> 'settlements'), (a.detail ->> 'complete')::boolean
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.crash_resumed'$$,
    $$values (1, false)$$,
    'one call settled, the row names it and is not complete'
);
select results_eq(
    $$select c.call_id, c.state, c.settlement from ticketiq.calls as c
      where c.run_id = tiq_test.rid(1) order by c.ordinal$$,
    $$values ('w1'::text, 'settled'::text, 'resent_same_key'::text), ('w2', 'pending', null)$$,
    'the settled call is recorded at once: no longer in doubt'
);

-- the resumer dies here; the next resume finds w1 settled
select tiq_test.take_over(tiq_test.rid(1), 'p3');
select ticketiq.record_resume(
    tiq_test.rid(1), 5,
    '[{"call_id": "w1", "settlement": "resent_same_key", "outcome": {"id": "INC-1"}}]'
);
select ticketiq.record_resume(tiq_test.rid(1), 5, '[{"call_id": "w2", "settlement": "made"}]');
select results_eq(
    $$select v.epoch, v.loss_count, jsonb_array_length(v.settlements) from ticketiq.resume_audit as v
      where v.run_id = tiq_test.rid(1) order by v.audit_id$$,
    $$values (3::bigint, 1, 1), (5::bigint, 2, 2)$$,
    'each resume keeps its own row: the first names what it settled'
);
select is(
    (select (a.detail ->> 'complete')::boolean from ticketiq.audit as a
     where a.run_id = tiq_test.rid(1) and a.epoch = 5 and a.event = 'agent.run.crash_resumed'),
    true, 'the second resume settled every call: complete'
);
select is(
    (select count(*)::integer from ticketiq.transcript_entries as t
     where t.run_id = tiq_test.rid(1) and t.kind = 'resumed'),
    1, 'the transcript is told once, of the resume that completed'
);

select * from finish();
rollback;
