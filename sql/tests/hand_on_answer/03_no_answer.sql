-- hand_on_answer: a run with no sealed answer has nothing to hand on (TQ007).
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.hand_on_answer(tiq_test.rid(1), 1)$$, 'TQ007', null, 'no sealed answer');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the run keeps running, unchanged');

select * from finish();
rollback;
