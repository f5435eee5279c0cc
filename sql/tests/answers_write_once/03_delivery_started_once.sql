-- answers_write_once: delivery_started_at may be set once, from null (the
-- delivery mark); then it can be neither moved nor cleared (TQ005), while
-- the single hand-on is still allowed.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 'ans-seal', 'k2', 600);

select lives_ok(
    $$update ticketiq.answers set delivery_started_at = '2030-01-01 00:00:01+00' where run_id = tiq_test.rid(1)$$,
    'delivery_started_at is set once from null'
);
select throws_ok(
    $$update ticketiq.answers set delivery_started_at = '2030-01-01 00:00:02+00' where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'a second delivery start is refused'
);
select throws_ok(
    $$update ticketiq.answers set delivery_started_at = null where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'the delivery start cannot be undone'
);
select lives_ok(
    $$update ticketiq.answers set handed_on_at = '2030-01-01 00:00:03+00', handed_on_epoch = 1
      where run_id = tiq_test.rid(1)$$,
    'the hand-on is still allowed'
);

select * from finish();
rollback;
