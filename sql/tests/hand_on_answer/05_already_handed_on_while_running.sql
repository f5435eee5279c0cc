-- hand_on_answer: should a running run's answer be marked handed on already
-- (only the write-once trigger's single hand-on update can do that), a
-- hand-on raises TQ005 answer_sealed and changes nothing.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 'ans-seal', 'k2', 600);
update ticketiq.answers
set handed_on_at = '2030-01-01 00:00:00+00', handed_on_epoch = 1
where run_id = tiq_test.rid(1);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.hand_on_answer(tiq_test.rid(1), 1)$$, 'TQ005', null,
    'an answer already handed on is not handed on again'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the run is not completed a second time');

select * from finish();
rollback;
