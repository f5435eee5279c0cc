-- decide_approval: a decision needs an actor and approve true or false:
-- an empty or null actor, or a null decision, raises TQ004; the request
-- keeps waiting and nothing is written.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, '')$$,
    'TQ004', null, 'empty actor'
);
select throws_ok(
    $$select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), true, null)$$,
    'TQ004', null, 'null actor'
);
select throws_ok(
    $$select ticketiq.decide_approval(tiq_test.approval_id(tiq_test.rid(1), 'w1'), null, 'alice')$$,
    'TQ004', null, 'null decision'
);
select is((select a.state from ticketiq.approval_requests as a), 'waiting', 'the request keeps waiting');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written (I15)');

select * from finish();
rollback;
