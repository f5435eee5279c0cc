-- restart_run: a failed run (lost more than twice) is claimed again for the
-- one resume path: epoch + 1, losses and attempts reset, its entry running
-- again, audited agent.run.restarted with who and why; adopt_run then takes
-- it, and its resume row is agent.run.resumed with the reason 'restarted'.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.entry_run('task-1', 'p1', 8, true, 'a2a');
select tiq_test.checkpoint(e.run_id, 1, 1, jsonb_build_array(tiq_test.call('w1', 'write', 'k-w1')))
from ticketiq.entries as e where e.sender_id = 'task-1';
select ticketiq.record_attempt(e.run_id, 1, 1, 'model', 'boom') from ticketiq.entries as e where e.sender_id = 'task-1';
select ticketiq.fail_run(e.run_id, 1, 'the model failed: boom', 'agent.run.failed')
from ticketiq.entries as e where e.sender_id = 'task-1';

create temporary table restarted as
select r.* from ticketiq.entries as e
cross join lateral ticketiq.restart_run(e.run_id, 'alice', 'the model is back') as r
where e.sender_id = 'task-1';

select results_eq(
    $$select r.status, r.epoch, r.step, r.previous_status, r.previous_reason, r.attempts_reset from restarted as r$$,
    $$values ('claimed'::text, 2::bigint, 1, 'failed'::text, 'the model failed: boom'::text, 1)$$,
    'claimed at epoch + 1 from its last step; what ended it named'
);
select results_eq(
    $$select r.status::text, r.loss_count::integer, r.failure_reason, r.finished_at, r.claim_reason
      from ticketiq.runs as r, restarted as x where r.run_id = x.run_id$$,
    $$values ('claimed'::text, 0, null::text, null::timestamptz, 'restarted'::text)$$,
    'the run: claimed, no losses, no failure, not finished'
);
select is(
    (select count(*) from ticketiq.attempts as t, restarted as x where t.run_id = x.run_id), 0::bigint,
    'its failed attempts are reset (a fresh retry budget)'
);
select is(
    (select e.state from ticketiq.entries as e where e.sender_id = 'task-1'), 'running',
    'its entry is running again'
);
select results_eq(
    $$select a.actor, a.detail ->> 'reason', a.detail ->> 'previous_status'
      from ticketiq.audit as a, restarted as x where a.run_id = x.run_id and a.event = 'agent.run.restarted'$$,
    $$values ('alice'::text, 'the model is back'::text, 'failed'::text)$$,
    'audited with who and why'
);
select results_eq(
    $$select a.epoch, a.last_step, jsonb_array_length(a.calls)
      from restarted as x cross join lateral ticketiq.adopt_run('p2', 8, x.run_id) as a$$,
    $$values (3::bigint, 1, 1)$$,
    'adopt_run takes it with its last step and the call it left'
);
select results_eq(
    $$select a.event, a.detail ->> 'reason' from ticketiq.audit as a, restarted as x
      where a.run_id = x.run_id and a.epoch = 3 and a.event like 'agent.run.%resumed'$$,
    $$values ('agent.run.resumed'::text, 'restarted'::text)$$,
    'its resume is audited as a resume after a restart, not a crash'
);

select * from finish();
rollback;
