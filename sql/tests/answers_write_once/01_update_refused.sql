-- answers_write_once: a sealed answer never changes, whoever tries, even the
-- table owner (TQ005, enforced in the database); only the single hand-on
-- may set handed_on_at/handed_on_epoch from null.
begin;
select plan(10);

select has_trigger('ticketiq', 'answers', 'answers_write_once', 'answers has the write-once trigger');
select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 'ans-seal', 'k2', 600);
select tiq_test.save_fingerprint();

select throws_ok(
    $$update ticketiq.answers set body = '{"text": "Changed."}' where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'the body cannot be changed'
);
select throws_ok(
    $$update ticketiq.answers set seal = 'forged' where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'nor the seal'
);
select throws_ok(
    $$update ticketiq.answers set retain_until = retain_until + interval '1 day' where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'nor the retention'
);
select throws_ok(
    $$update ticketiq.answers set step = 2 where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'nor the step'
);
select throws_ok(
    $$update ticketiq.answers set epoch = 2 where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'nor the epoch'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the answer is unchanged');

select lives_ok(
    $$update ticketiq.answers set handed_on_at = '2030-01-01 00:00:01+00', handed_on_epoch = 1
      where run_id = tiq_test.rid(1)$$,
    'the single hand-on sets handed_on_at from null'
);
select throws_ok(
    $$update ticketiq.answers set handed_on_at = '2030-01-01 00:00:02+00' where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'a second hand-on time is refused'
);
select throws_ok(
    $$update ticketiq.answers set handed_on_at = null, handed_on_epoch = null where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'the hand-on cannot be undone'
);

select * from finish();
rollback;
