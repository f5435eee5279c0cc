-- request_approval: a changing call held for approval files one waiting
-- request (tool and arguments from the call, the summary given, the
-- database clock and the epoch), records it on the call (calls.approval_id),
-- audits approval.requested and lists it in approvals_waiting.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'))
);
select tiq_test.advance(2);

create temp table requested on commit drop as
select r.* from ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1', '{"title": "close ticket"}') as r;

select is((select count(*) from requested), 1::bigint, 'one row returned');
select is(
    (select (r.state, r.coalesced, r.decided_by, r.decided_at, r.reason) from requested as r),
    row('waiting'::text, false, null::text, null::timestamptz, null::text),
    'waiting, not coalesced, undecided'
);
select isnt((select r.approval_id from requested as r), null, 'an approval id is returned');
select results_eq(
    $$select a.approval_id, a.run_id, a.step, a.call_id, a.tool, a.arguments, a.summary, a.state,
             a.requested_at, a.requested_epoch, a.decided_at, a.decided_by, a.reason
      from ticketiq.approval_requests as a$$,
    $$select r.approval_id, tiq_test.rid(1), 1, 'w1'::text, 'tool_write'::text, '{"for": "w1"}'::jsonb,
             '{"title": "close ticket"}'::jsonb, 'waiting'::text, '2030-01-01 00:00:02+00'::timestamptz,
             1::bigint, null::timestamptz, null::text, null::text
      from requested as r$$,
    'one request: the call''s tool and arguments, the summary, the database clock and the epoch'
);
select is(
    (select c.approval_id from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'),
    (select r.approval_id from requested as r),
    'the request is recorded on the call'
);
select is(
    (select count(*) from ticketiq.approval_requests as a where a.run_id = tiq_test.rid(1) and a.call_id = 'r1'),
    0::bigint,
    'the other call of the step, a read with no row, has none'
);
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'),
    'pending',
    'the call itself stays pending (it is not marked in doubt by the request)'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.detail
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event like 'approval.%'$$,
    $$select 'approval.requested'::text, 1::bigint, null::text,
             jsonb_build_object('approval_id', r.approval_id, 'step', 1, 'call_id', 'w1', 'tool', 'tool_write')
      from requested as r$$,
    'approval.requested audited at the epoch with the request, step, call and tool'
);
select results_eq(
    $$select w.approval_id, w.run_id, w.step, w.call_id, w.requested_at from ticketiq.approvals_waiting as w$$,
    $$select r.approval_id, tiq_test.rid(1), 1, 'w1'::text, '2030-01-01 00:00:02+00'::timestamptz
      from requested as r$$,
    'approvals_waiting lists it'
);

select * from finish();
rollback;
