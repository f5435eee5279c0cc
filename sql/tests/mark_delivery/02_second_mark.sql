-- mark_delivery: marking again (a process that replaced a dead one) returns
-- the first mark with already_started = true and changes nothing, so the
-- reply is read back before it is posted.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 's', 'k1', 600);
select ticketiq.mark_delivery(tiq_test.rid(1), 1);
select tiq_test.advance(3);
select tiq_test.save_fingerprint();

select results_eq(
    $$select m.delivery_started_at, m.already_started from ticketiq.mark_delivery(tiq_test.rid(1), 1) as m$$,
    $$values ('2030-01-01 00:00:00+00'::timestamptz, true)$$,
    'the second mark returns the first, already started'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select tiq_test.take_over(tiq_test.rid(1), 'p2');
select results_eq(
    $$select m.delivery_started_at, m.already_started from ticketiq.mark_delivery(tiq_test.rid(1), 3) as m$$,
    $$values ('2030-01-01 00:00:00+00'::timestamptz, true)$$,
    'the adopter of the lost run finds the first mark'
);

select * from finish();
rollback;
