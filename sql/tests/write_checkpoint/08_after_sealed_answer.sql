-- write_checkpoint: a run whose answer is sealed takes no further step
-- (TQ005 answer_sealed), while its attempt still holds the lease (I10).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "done"}', 'answer-seal', 'k1', 3600);
select is(
    (select r.status from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'running',
    'the sealed run is still running with its lease'
);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 1, 3)$$,
    'TQ005', null, 'the next step after the answer is refused'
);
select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 1, 2)$$,
    'TQ005', null, 'a checkpoint at the answer''s step is refused'
);
select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 1, 1)$$,
    'TQ005', null, 'a replay of step 1 is refused too'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
