-- take_over_child: a child failed by the take-over ends exactly as a sweep
-- ends it (its header: "claims it exactly as a sweep would ... failed past
-- p_max_losses, audited"): lease_lapsed and agent.run.failed audited at the
-- new epoch, and one transcript entry of kind failed whose reason is the
-- run's failure_reason.  A child failed by the sweep is the reference.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-s', 'c1', 8, tiq_test.rid(2));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-t', 'c1', 20, tiq_test.rid(3));

-- the sweep fails child 2 (max losses 0); child 3 is still alive then.
select tiq_test.advance(9);
select ticketiq.sweep_lapsed('leader', 0);
-- child 3 lapses; its parent takes it over (max losses 0) and fails it.
select tiq_test.advance(12);
select ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(3), 'p1', 30, 0);

select results_eq(
    $$select a.event, a.epoch from ticketiq.audit as a
      where a.run_id = tiq_test.rid(2) and a.event <> 'agent.run.started' order by a.audit_id$$,
    $$values ('agent.run.lease_lapsed'::text, 2::bigint), ('agent.run.failed', 2)$$,
    'reference: the sweep audits lease_lapsed and agent.run.failed'
);
select results_eq(
    $$select a.event, a.epoch from ticketiq.audit as a
      where a.run_id = tiq_test.rid(3) and a.event <> 'agent.run.started' order by a.audit_id$$,
    $$values ('agent.run.lease_lapsed'::text, 2::bigint), ('agent.run.failed', 2)$$,
    'the take-over audits lease_lapsed and agent.run.failed too'
);
select results_eq(
    $$select t.kind, t.body ->> 'reason' = r.failure_reason
      from ticketiq.transcript_entries as t
      inner join ticketiq.runs as r on t.run_id = r.run_id
      where t.run_id = tiq_test.rid(2)$$,
    $$values ('failed'::text, true)$$,
    'reference: the sweep tells the transcript the run''s failure reason'
);
select results_eq(
    $$select t.kind, t.body ->> 'reason' = r.failure_reason
      from ticketiq.transcript_entries as t
      inner join ticketiq.runs as r on t.run_id = r.run_id
      where t.run_id = tiq_test.rid(3)$$,
    $$values ('failed'::text, true)$$,
    'the take-over tells the transcript the run''s failure reason too'
);

select * from finish();
rollback;
