-- record_resume: the resume of a run released by its process (graceful
-- shutdown) is audited agent.run.resumed with reason released, not
-- agent.run.crash_resumed.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.release_run(tiq_test.rid(1), 1, 'SIGTERM');
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));
select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "redone"}]');

select results_eq(
    $$select a.event, a.epoch, a.detail ->> 'reason', (a.detail ->> 'loss_count')::integer
      from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event in ('agent.run.crash_resumed', 'agent.run.resumed')$$,
    $$values ('agent.run.resumed'::text, 3::bigint, 'released'::text, 0)$$,
    'one agent.run.resumed row with reason released'
);
select results_eq(
    $$select c.state, c.settlement from ticketiq.calls as c where c.run_id = tiq_test.rid(1)$$,
    $$values ('settled'::text, 'redone'::text)$$,
    'the settlements are recorded as for any resume'
);

select * from finish();
rollback;
