-- request_approval: a resumed run that routes the held call again finds the
-- request already decided (while its process was dead): the same id,
-- coalesced = true, with the decision, who took it, when and why; nothing
-- is asked again.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w2');

-- p1 dies; a person decides both while no process holds the run.
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.advance(5);
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'alice', 'looks right');
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2'), false, 'bob', 'wrong customer');
select tiq_test.advance(5);
select is(
    (select a.epoch from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a), 3::bigint,
    'p2 adopts the run at epoch 3'
);
select tiq_test.save_fingerprint();

select results_eq(
    $$select r.approval_id, r.state, r.coalesced, r.decided_by, r.decided_at, r.reason
      from ticketiq.request_approval(tiq_test.rid(1), 3, 1, 'w1') as r$$,
    $$values (tiq_test.approval_id(tiq_test.rid(1), 'w1'), 'approved'::text, true, 'alice'::text,
              '2030-01-01 00:00:14+00'::timestamptz, 'looks right'::text)$$,
    'the approved request comes back, coalesced, with who, when and why'
);
select results_eq(
    $$select r.approval_id, r.state, r.coalesced, r.decided_by, r.reason
      from ticketiq.request_approval(tiq_test.rid(1), 3, 1, 'w2') as r$$,
    $$values (tiq_test.approval_id(tiq_test.rid(1), 'w2'), 'rejected'::text, true, 'bob'::text,
              'wrong customer'::text)$$,
    'the rejected request comes back, coalesced'
);
select is(
    (select count(*) from ticketiq.approval_requests as a where a.run_id = tiq_test.rid(1)), 2::bigint,
    'still one request per call'
);
select is(
    (select count(*) from ticketiq.approvals_waiting), 0::bigint,
    'nothing is waiting: no decision is asked again'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'filing again changed nothing');

select * from finish();
rollback;
