-- mark_delivery: fenced: unknown run TQ001, a stale epoch TQ002, a lapsed
-- lease TQ003, a run already completed TQ006; nothing is written.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 's', 'k1', 600);
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select ticketiq.seal_answer(tiq_test.rid(2), 1, 1, '{"text": "Done."}', 's', 'k1', 600);
select ticketiq.hand_on_answer(tiq_test.rid(2), 1);
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.mark_delivery(tiq_test.rid(9), 1)$$, 'TQ001', null, 'an unknown run');
select throws_ok($$select ticketiq.mark_delivery(tiq_test.rid(1), 2)$$, 'TQ002', null, 'a stale epoch');
select throws_ok($$select ticketiq.mark_delivery(tiq_test.rid(1), 1)$$, 'TQ003', null, 'a lapsed lease');
select throws_ok($$select ticketiq.mark_delivery(tiq_test.rid(2), 1)$$, 'TQ006', null, 'a completed run');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
