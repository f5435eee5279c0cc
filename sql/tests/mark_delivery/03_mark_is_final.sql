-- mark_delivery: once marked, the delivery start cannot be changed or
-- cleared, whoever tries (answers_write_once, TQ005).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 's', 'k1', 600);
select ticketiq.mark_delivery(tiq_test.rid(1), 1);

select throws_ok(
    $$update ticketiq.answers set delivery_started_at = '2030-01-01 00:00:05+00' where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'the mark cannot be moved'
);
select throws_ok(
    $$update ticketiq.answers set delivery_started_at = null where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'nor cleared'
);
select is(
    (select a.delivery_started_at from ticketiq.answers as a where a.run_id = tiq_test.rid(1)),
    '2030-01-01 00:00:00+00'::timestamptz,
    'the mark is unchanged'
);

select * from finish();
rollback;
