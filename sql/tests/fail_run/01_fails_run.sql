-- fail_run: the current attempt fails its run with the reason: lease
-- released, transcript told, failure audited under p_event.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.advance(1);

select results_eq(
    $$select f.run_id, f.status, f.finished_at
      from ticketiq.fail_run(tiq_test.rid(1), 1, 'checkpoint seal does not verify', 'agent.run.seal_failed') as f$$,
    $$values (tiq_test.rid(1), 'failed'::text, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'returns the run failed now'
);
select results_eq(
    $$select r.status::text, r.failure_reason, r.lease_holder, r.lease_expires_at, r.epoch::bigint
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('failed'::text, 'checkpoint seal does not verify'::text, null::text, null::timestamptz, 1::bigint)$$,
    'the run is failed with the reason and its lease released'
);
select results_eq(
    $$select t.kind, t.body ->> 'reason' from ticketiq.transcript_entries as t where t.run_id = tiq_test.rid(1)$$,
    $$values ('failed'::text, 'checkpoint seal does not verify'::text)$$,
    'the transcript is told'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.detail ->> 'reason', (a.detail ->> 'step')::integer
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event like 'agent.run.%failed'$$,
    $$values ('agent.run.seal_failed'::text, 1::bigint, 'p1'::text, 'checkpoint seal does not verify'::text, 1)$$,
    'audited under the given event'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.fail_run(tiq_test.rid(2), 1, 'owner no longer allowed');
select is(
    (select a.event from ticketiq.audit as a where a.run_id = tiq_test.rid(2) and a.event <> 'agent.run.started'),
    'agent.run.failed',
    'the event defaults to agent.run.failed'
);
select is_empty($$select 1 from ticketiq.adopt_run('p2', 8)$$, 'a failed run is never adopted');

select * from finish();
rollback;
