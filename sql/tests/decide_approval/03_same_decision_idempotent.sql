-- decide_approval: deciding the same way again (a retried click, a second
-- person) returns the stored decision, its first actor and time, and
-- changes nothing: no second audit row.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w2');
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'alice', 'fine');
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2'), false, 'alice', 'no');
select tiq_test.advance(10);
select tiq_test.save_fingerprint();

select results_eq(
    $$select d.state, d.decided_by, d.decided_at
      from ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'carol', 'me too') as d$$,
    $$values ('approved'::text, 'alice'::text, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'approving again returns the stored approval: alice, at the first time'
);
select results_eq(
    $$select d.state, d.decided_by, d.decided_at
      from ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2'), false, 'carol') as d$$,
    $$values ('rejected'::text, 'alice'::text, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'rejecting again returns the stored rejection'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event in ('approval.approved', 'approval.rejected')),
    2::bigint,
    'one audit row per decision'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'deciding again changed nothing');

select * from finish();
rollback;
