-- hand_on_answer: an answer is handed on at most once (I10): the second
-- hand-on finds the run completed (TQ006) and changes nothing.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 'ans-seal', 'k2', 600);
select ticketiq.hand_on_answer(tiq_test.rid(1), 1);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.hand_on_answer(tiq_test.rid(1), 1)$$, 'TQ006', null,
    'the second hand-on: run completed'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select count(*) from ticketiq.transcript_entries as t where t.run_id = tiq_test.rid(1) and t.kind = 'answer'),
    1::bigint,
    'the transcript has the answer once'
);

select * from finish();
rollback;
