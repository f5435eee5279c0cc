-- decide_approval: deciding a decided request the other way raises TQ007
-- step_conflict and changes nothing: the first decision stands.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w2');
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'alice');
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2'), false, 'alice');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), false, 'bob')$$,
    'TQ007', null, 'rejecting an approved request'
);
select throws_ok(
    $$select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2'), true, 'bob')$$,
    'TQ007', null, 'approving a rejected request'
);
select results_eq(
    $$select a.call_id, a.state, a.decided_by from ticketiq.approval_requests as a order by a.call_id$$,
    $$values ('w1'::text, 'approved'::text, 'alice'::text), ('w2', 'rejected', 'alice')$$,
    'the first decisions stand'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed (I15)');

select * from finish();
rollback;
