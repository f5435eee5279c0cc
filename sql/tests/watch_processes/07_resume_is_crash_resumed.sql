-- watch_processes: a run claimed because its process's session ended is a
-- crash: the adopter's resume is audited agent.run.crash_resumed (I14) with
-- reason session_ended; a run lost more than max losses is failed.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.watch_session('w');
select tiq_test.dead_process('p1');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
update ticketiq.runs set loss_count = 2 where run_id = tiq_test.rid(2);
select ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1}', 2);
select tiq_test.advance(1);
select ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{}', 2);
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));
select ticketiq.record_resume(tiq_test.rid(1), 3, '[]');

select results_eq(
    $$select a.event, a.detail ->> 'reason' from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event like 'agent.run.%resumed'$$,
    $$values ('agent.run.crash_resumed'::text, 'session_ended'::text)$$,
    'the resume is a crash resume, with its reason'
);
select results_eq(
    $$select r.status::text, r.loss_count::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('failed'::text, 3)$$,
    'a run lost a third time is failed'
);
select alike(
    (select r.failure_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(2)),
    '%liveness session of p1 ended%',
    'with the cause'
);

select pg_advisory_unlock_all();
select * from finish();
rollback;
