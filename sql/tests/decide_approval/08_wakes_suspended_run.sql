-- decide_approval: a run suspended on the request (approval:<id>) is woken
-- by the decision, approved or rejected: claimed at epoch + 1, woken,
-- audited; a run suspended on another request stays suspended.  Deciding
-- the same way again wakes nothing more.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(v.n), true)
from (values (1), (2), (3)) as v (n);
select tiq_test.checkpoint(tiq_test.rid(v.n), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')))
from (values (1), (2), (3)) as v (n);
select ticketiq.request_approval(tiq_test.rid(v.n), 1, 1, 'w1')
from (values (1), (2), (3)) as v (n);
select ticketiq.suspend_run(tiq_test.rid(v.n), 1, 'approval:' || tiq_test.approval_id(tiq_test.rid(v.n), 'w1')::text)
from (values (1), (2), (3)) as v (n);
select tiq_test.advance(30);

select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'alice');
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(2), 'w1'), false, 'bob');

select results_eq(
    $$select r.run_id, r.status::text, r.epoch::bigint, r.wait_key,
        r.claim_reason from ticketiq.runs as r order by r.run_id$$,
    $$values (tiq_test.rid(1), 'claimed'::text, 3::bigint, null::text, 'woken'::text),
             (tiq_test.rid(2), 'claimed', 3, null, 'woken'),
             (tiq_test.rid(3), 'suspended', 2, 'approval:' || tiq_test.approval_id(tiq_test.rid(3), 'w1')::text,
              null)$$,
    'the approved and the rejected runs are woken; the third still waits'
);
select results_eq(
    $$select a.run_id, a.detail ->> 'wait_key' from ticketiq.audit as a
      where a.event = 'agent.run.woken' order by a.run_id$$,
    $$values (tiq_test.rid(1), 'approval:' || tiq_test.approval_id(tiq_test.rid(1), 'w1')::text),
             (tiq_test.rid(2), 'approval:' || tiq_test.approval_id(tiq_test.rid(2), 'w1')::text)$$,
    'agent.run.woken audited with each request''s key'
);
select lives_ok(
    $$select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'alice')$$,
    'deciding the same way again'
);
select is(tiq_test.epoch(tiq_test.rid(1)), 3::bigint, 'wakes nothing more');
select results_eq(
    $$select a.state, a.approval_id from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as r
      cross join lateral jsonb_to_recordset(r.calls) as c (call_id text, approval_id uuid)
      inner join ticketiq.approval_requests as a on c.approval_id = a.approval_id$$,
    $$values ('approved'::text, tiq_test.approval_id(tiq_test.rid(1), 'w1'))$$,
    'the woken run is adopted with its call''s approved request'
);

select * from finish();
rollback;
