-- delegation_status: once the child sealed its answer the parent reads it
-- by the delegation key (body and step), before and after the child hands
-- it on and completes.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.checkpoint(tiq_test.rid(2), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select ticketiq.seal_answer(tiq_test.rid(2), 1, 2, '{"found": 3}', 'seal-a', 'k1', 3600);

select results_eq(
    $$select d.status, d.answer, d.answer_step, d.lease_lapsed from ticketiq.delegation_status('deleg-1') as d$$,
    $$values ('running'::text, '{"found": 3}'::jsonb, 2, false)$$,
    'sealed, not yet handed on: the answer and its step'
);
select ticketiq.hand_on_answer(tiq_test.rid(2), 1);
select results_eq(
    $$select d.status, d.answer, d.answer_step, d.lease_lapsed from ticketiq.delegation_status('deleg-1') as d$$,
    $$values ('completed'::text, '{"found": 3}'::jsonb, 2, false)$$,
    'handed on: completed, the answer still there'
);

select * from finish();
rollback;
