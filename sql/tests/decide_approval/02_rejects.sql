-- decide_approval: a person rejects a waiting request: rejected by that
-- actor with the reason, audited approval.rejected; a request without a
-- reason is decided too (reason null).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w2');
select tiq_test.advance(4);

select results_eq(
    $$select d.state, d.decided_by, d.decided_at
      from ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), false, 'bob', 'wrong queue') as d$$,
    $$values ('rejected'::text, 'bob'::text, '2030-01-01 00:00:04+00'::timestamptz)$$,
    'returns the request rejected by bob now'
);
select results_eq(
    $$select a.state, a.decided_by, a.reason from ticketiq.approval_requests as a where a.call_id = 'w1'$$,
    $$values ('rejected'::text, 'bob'::text, 'wrong queue'::text)$$,
    'the request is stored rejected with the reason'
);
select results_eq(
    $$select a.event, a.actor, a.detail ->> 'call_id', a.detail ->> 'reason'
      from ticketiq.audit as a where a.event = 'approval.rejected'$$,
    $$values ('approval.rejected'::text, 'bob'::text, 'w1'::text, 'wrong queue'::text)$$,
    'approval.rejected audited'
);
select is(
    (select d.state from ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2'), false, 'bob') as d),
    'rejected',
    'a decision without a reason'
);
select is(
    (select a.reason from ticketiq.approval_requests as a where a.call_id = 'w2'), null,
    'stores no reason'
);

select * from finish();
rollback;
