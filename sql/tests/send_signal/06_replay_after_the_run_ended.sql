-- send_signal: a delivered signal sent again after its run ended answers as
-- the first delivery did (created false), since nothing is stored either
-- way (issue 46, finding 11); a new signal to the ended run is still TQ006,
-- and the same key with another payload TQ013.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 'msg-1', 'alice');
select ticketiq.fail_run(tiq_test.rid(1), 1, 'done with it');
select tiq_test.save_fingerprint();

select results_eq(
    $$select s.signal_id, s.created, s.woken
      from ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 'msg-1', 'alice') as s$$,
    $$select s.signal_id, false, 0 from ticketiq.workflow_signals as s$$,
    'the same request again: the first delivery, not a refusal'
);
select throws_ok(
    $$select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 'msg-2', 'alice')$$,
    'TQ006', null, 'a new signal to the ended run'
);
select throws_ok(
    $$select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 2}', 'msg-1', 'alice')$$,
    'TQ013', null, 'the same key with another payload'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
