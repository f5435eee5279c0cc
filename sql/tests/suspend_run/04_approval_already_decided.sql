-- suspend_run: a run that suspends on an approval already decided (the
-- decision came before the run got there) is woken at once: claimed at
-- epoch + 2, claim_reason woken, suspended then woken audited.  One whose
-- approval still waits stays suspended.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), false, 'alice');
select tiq_test.new_run('p1', 60, tiq_test.rid(2), true);
select tiq_test.checkpoint(tiq_test.rid(2), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.request_approval(tiq_test.rid(2), 1, 1, 'w1');

select results_eq(
    $$select s.status, s.epoch
      from ticketiq.suspend_run(
          tiq_test.rid(1), 1, 'approval:' || tiq_test.approval_id(tiq_test.rid(1), 'w1')::text
      ) as s$$,
    $$values ('claimed'::text, 3::bigint)$$,
    'the decided approval: woken at once, claimed at epoch 3'
);
select results_eq(
    $$select r.status::text, r.wait_key, r.claim_reason, r.lease_holder from ticketiq.runs as r
      where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, null::text, 'woken'::text, null::text)$$,
    'claimed for adoption, woken, no wait key'
);
select results_eq(
    $$select a.event from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event in ('agent.run.suspended', 'agent.run.woken')
      order by a.audit_id$$,
    $$values ('agent.run.suspended'::text), ('agent.run.woken')$$,
    'suspended, then woken, audited'
);
select is(
    (
        select s.status
        from ticketiq.suspend_run(
            tiq_test.rid(2), 1, 'approval:' || tiq_test.approval_id(tiq_test.rid(2), 'w1')::text
        ) as s
    ),
    'suspended',
    'an approval still waiting: the run stays suspended'
);

select * from finish();
rollback;
