-- send_signal: a run holds at most 64 signals not yet consumed and 1 MiB
-- (1,048,576 bytes of their JSON text) of their payloads (issue 46, finding
-- 11); one more is TQ012 and changes nothing.  A consumed signal no longer
-- counts, and a repeated request is answered even at the limit.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_run('p1', 600, tiq_test.rid(2));
select ticketiq.send_signal(tiq_test.rid(1), 'ack', jsonb_build_object('n', i), 'msg-' || i)
from generate_series(1, 64) as i;
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 65}', 'msg-65')$$,
    'TQ012', null, 'the 65th pending signal'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select results_eq(
    $$select s.created from ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 64}', 'msg-64') as s$$,
    $$values (false)$$, 'a repeated request at the limit: the first delivery'
);
select ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'signal:' || tiq_test.rid(1) || ':ack');
select results_eq(
    $$select s.created from ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 65}', 'msg-65') as s$$,
    $$values (true)$$, 'one consumed: room for one more'
);

select ticketiq.send_signal(tiq_test.rid(2), 'big', jsonb_build_object('s', repeat('x', 500000)), 'b-1');
select ticketiq.send_signal(tiq_test.rid(2), 'big', jsonb_build_object('s', repeat('x', 500000)), 'b-2');
select throws_ok(
    $$select ticketiq.send_signal(tiq_test.rid(2), 'big', jsonb_build_object('s', repeat('x', 50000)), 'b-3')$$,
    'TQ012', null, 'past 1 MiB of pending payloads'
);
select results_eq(
    $$select s.created
      from ticketiq.send_signal(tiq_test.rid(2), 'big', jsonb_build_object('s', repeat('x', 40000)), 'b-3') as s$$,
    $$values (true)$$, 'within 1 MiB: stored'
);

select * from finish();
rollback;
