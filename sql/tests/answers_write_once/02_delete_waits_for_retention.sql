-- answers_write_once: a sealed answer cannot be deleted before retain_until
-- (TQ005), even by the table owner; after it, it can.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 'ans-seal', 'k2', 600);
select ticketiq.hand_on_answer(tiq_test.rid(1), 1);
select tiq_test.advance(599);

select throws_ok(
    $$delete from ticketiq.answers where run_id = tiq_test.rid(1)$$,
    'TQ005', null, 'a second before retain_until: refused'
);
select is(
    (select count(*) from ticketiq.answers as a where a.run_id = tiq_test.rid(1)), 1::bigint,
    'the answer is kept'
);
select tiq_test.advance(1);
select lives_ok(
    $$delete from ticketiq.answers where run_id = tiq_test.rid(1)$$,
    'at retain_until: deleted'
);
select is(
    (select count(*) from ticketiq.answers as a where a.run_id = tiq_test.rid(1)), 0::bigint,
    'the answer is gone'
);

select * from finish();
rollback;
