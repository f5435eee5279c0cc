-- send_signal: a sender key is one request (issue 46, finding 11).  The same
-- key again with another payload, or from another actor, raises TQ013 and
-- changes nothing, where it used to answer the first delivery and drop the
-- new payload unseen; the same key with the same payload and actor is the
-- first delivery again (created false).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 'msg-1', 'alice');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 2}', 'msg-1', 'alice')$$,
    'TQ013', null, 'another payload under the same key'
);
select throws_ok(
    $$select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 'msg-1', 'mallory')$$,
    'TQ013', null, 'the same key from another actor'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select results_eq(
    $$select s.created, s.woken from ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 'msg-1', 'alice') as s$$,
    $$values (false, 0)$$, 'the same request again: the first delivery'
);

select * from finish();
rollback;
