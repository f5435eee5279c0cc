-- stop_run: the current attempt ends its run because a Stop was asked:
-- stopped, lease released, transcript told, agent.run.stopped audited.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select ticketiq.request_stop(tiq_test.rid(1), 'alice@example.com', 'wrong customer');
select tiq_test.advance(1);

select results_eq(
    $$select s.run_id, s.status, s.finished_at from ticketiq.stop_run(tiq_test.rid(1), 1, 'Stop by alice') as s$$,
    $$values (tiq_test.rid(1), 'stopped'::text, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'returns the run stopped now'
);
select results_eq(
    $$select r.status::text, r.failure_reason, r.lease_holder, r.lease_expires_at
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('stopped'::text, 'Stop by alice'::text, null::text, null::timestamptz)$$,
    'stopped with the reason, lease released'
);
select results_eq(
    $$select t.kind, t.body ->> 'reason' from ticketiq.transcript_entries as t where t.run_id = tiq_test.rid(1)$$,
    $$values ('stopped'::text, 'Stop by alice'::text)$$,
    'the transcript is told'
);
select results_eq(
    $$select a.epoch, a.actor, a.detail ->> 'requested_by', (a.detail ->> 'step')::integer
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.stopped'$$,
    $$values (1::bigint, 'p1'::text, 'alice@example.com'::text, 1)$$,
    'agent.run.stopped audited with who asked'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.stop_run(tiq_test.rid(2), 1, '');
select is(
    (select r.failure_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(2)), 'stop requested',
    'an empty reason becomes stop requested'
);

select * from finish();
rollback;
