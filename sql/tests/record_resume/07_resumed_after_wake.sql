-- record_resume: the resume of a run woken from a suspension is no crash
-- resume: it is audited agent.run.resumed with reason woken (no
-- crash_resumed row, not in resume_audit), the transcript is told, and it
-- is recorded once per epoch (TQ007 for a record that says otherwise).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1');
select ticketiq.wake_runs('reply:conv-1');
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));

select results_eq(
    $$select r.step, r.loss_count from ticketiq.record_resume(tiq_test.rid(1), 4,
        '[{"call_id": "r1", "settlement": "redone"}]') as r$$,
    $$values (1, 0)$$,
    'the resume is recorded at step 1, no loss'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.detail ->> 'reason', (a.detail ->> 'step')::integer
      from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event in ('agent.run.crash_resumed', 'agent.run.resumed')$$,
    $$values ('agent.run.resumed'::text, 4::bigint, 'p2'::text, 'woken'::text, 1)$$,
    'one agent.run.resumed row with reason woken, no crash_resumed'
);
select is_empty($$select 1 from ticketiq.resume_audit$$, 'resume_audit lists crash resumes only');
select is(
    (select count(*) from ticketiq.transcript_entries as t where t.run_id = tiq_test.rid(1) and t.kind = 'resumed'),
    1::bigint,
    'the transcript is told'
);
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 4,
        '[{"call_id": "r1", "settlement": "unknown"}]')$$, 'TQ007', null,
    'a second record of the same resume, saying otherwise'
);

select * from finish();
rollback;
