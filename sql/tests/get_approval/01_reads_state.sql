-- get_approval: reads a request's state as a waiting run polls it: waiting
-- (undecided), then the decision with who took it, when and why; reading
-- changes nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w2');

select results_eq(
    $$select g.approval_id, g.run_id, g.state, g.decided_by, g.decided_at, g.reason
      from ticketiq.get_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1')) as g$$,
    $$values (tiq_test.approval_id(tiq_test.rid(1), 'w1'), tiq_test.rid(1), 'waiting'::text, null::text,
              null::timestamptz, null::text)$$,
    'a waiting request: undecided'
);

select tiq_test.advance(30);
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, 'alice', 'ok');
select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2'), false, 'bob', 'no');
select tiq_test.save_fingerprint();

select results_eq(
    $$select g.state, g.decided_by, g.decided_at, g.reason
      from ticketiq.get_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1')) as g$$,
    $$values ('approved'::text, 'alice'::text, '2030-01-01 00:00:30+00'::timestamptz, 'ok'::text)$$,
    'an approved request: who, when and why'
);
select results_eq(
    $$select g.state, g.decided_by, g.reason
      from ticketiq.get_approval(tiq_test.approval_id(tiq_test.rid(1), 'w2')) as g$$,
    $$values ('rejected'::text, 'bob'::text, 'no'::text)$$,
    'a rejected request'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'reading changed nothing');

select * from finish();
rollback;
