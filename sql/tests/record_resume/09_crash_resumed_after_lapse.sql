-- record_resume: the resume of a run whose lease lapsed is a crash resume:
-- agent.run.crash_resumed with reason lease_lapsed, also when the run had
-- been released before (the last reason counts) and when a parent took a
-- lapsed child over.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select ticketiq.record_resume(tiq_test.rid(1), 3, '[]');

select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select ticketiq.release_run(tiq_test.rid(2), 1);
select ticketiq.adopt_run('p2', 8, tiq_test.rid(2));
select tiq_test.take_over(tiq_test.rid(2), 'p3');
select ticketiq.record_resume(tiq_test.rid(2), 5, '[]');

select tiq_test.new_run('p3', 600, tiq_test.rid(3));
select tiq_test.new_child(tiq_test.rid(3), 'deleg-1', 'c1', 8, tiq_test.rid(4));
select tiq_test.advance(9);
select ticketiq.take_over_child(tiq_test.rid(3), 1, tiq_test.rid(4), 'p3', 30);
select ticketiq.record_resume(tiq_test.rid(4), 3, '[]');

select results_eq(
    $$select a.event, a.epoch, a.detail ->> 'reason' from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event in ('agent.run.crash_resumed', 'agent.run.resumed')$$,
    $$values ('agent.run.crash_resumed'::text, 3::bigint, 'lease_lapsed'::text)$$,
    'after a sweep: crash_resumed, reason lease_lapsed'
);
select results_eq(
    $$select a.event, a.epoch, a.detail ->> 'reason' from ticketiq.audit as a
      where a.run_id = tiq_test.rid(2) and a.event in ('agent.run.crash_resumed', 'agent.run.resumed')
      order by a.audit_id$$,
    $$values ('agent.run.resumed'::text, 3::bigint, 'released'::text),
             ('agent.run.crash_resumed', 5, 'lease_lapsed')$$,
    'released and adopted: resumed; then lost: crash_resumed'
);
select results_eq(
    $$select a.event, a.epoch, a.detail ->> 'reason' from ticketiq.audit as a
      where a.run_id = tiq_test.rid(4) and a.event in ('agent.run.crash_resumed', 'agent.run.resumed')$$,
    $$values ('agent.run.crash_resumed'::text, 3::bigint, 'lease_lapsed'::text)$$,
    'a lapsed child taken over by its parent: crash_resumed'
);

select * from finish();
rollback;
