-- decide_approval: a person approves a waiting request: it is approved by
-- that actor at the database clock with the reason, audited
-- approval.approved, and no longer waiting.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.advance(4);

select results_eq(
    $$select d.approval_id, d.run_id, d.state, d.decided_by, d.decided_at
      from ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'alice', 'fine') as d$$,
    $$values (tiq_test.approval_id(tiq_test.rid(1), 'w1'), tiq_test.rid(1), 'approved'::text, 'alice'::text,
              '2030-01-01 00:00:04+00'::timestamptz)$$,
    'returns the request approved by alice now'
);
select results_eq(
    $$select a.state, a.decided_by, a.decided_at, a.reason from ticketiq.approval_requests as a$$,
    $$values ('approved'::text, 'alice'::text, '2030-01-01 00:00:04+00'::timestamptz, 'fine'::text)$$,
    'the request is stored approved, with the actor, the time and the reason'
);
select results_eq(
    $$select a.event, a.run_id, a.epoch, a.actor, a.detail
      from ticketiq.audit as a where a.event like 'approval.%' and a.event <> 'approval.requested'$$,
    $$values ('approval.approved'::text, tiq_test.rid(1), null::bigint, 'alice'::text,
              jsonb_build_object('approval_id', tiq_test.approval_id(tiq_test.rid(1), 'w1'), 'step', 1,
                                 'call_id', 'w1', 'reason', 'fine'))$$,
    'approval.approved audited with the actor, request, step, call and reason'
);
select is((select count(*) from ticketiq.approvals_waiting), 0::bigint, 'no longer waiting');
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'), 'pending',
    'the call is left to the run: still pending'
);

select * from finish();
rollback;
