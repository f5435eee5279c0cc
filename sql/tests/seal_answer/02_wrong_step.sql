-- seal_answer: the answer must be step last_step + 1 (TQ007).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{}', 's', 'k', 60)$$,
    'TQ007', null, 'the step of the last checkpoint'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 3, '{}', 's', 'k', 60)$$,
    'TQ007', null, 'a step ahead'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, null, '{}', 's', 'k', 60)$$,
    'TQ007', null, 'a null step'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select lives_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{}', 's', 'k', 60)$$,
    'step 2 seals'
);

select * from finish();
rollback;
