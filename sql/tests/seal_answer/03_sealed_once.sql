-- seal_answer: a sealed answer is final (I10): the same seal again is a
-- replay that changes nothing; any other answer raises TQ005, also from the
-- attempt that adopted the run.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "first"}', 'seal-a', 'k1', 600);
select tiq_test.advance(1);
select tiq_test.save_fingerprint();

create temp table replay on commit drop as
select s.* from ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "first"}', 'seal-a', 'k1', 600) as s;

select is((select r.replayed from replay as r), true, 'the same seal again is a replay');
select is(
    (select (r.step, r.sealed_at) from replay as r), row(1, '2030-01-01 00:00:00+00'::timestamptz),
    'returning the stored step and sealed_at'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the replay changed nothing');

select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "second"}', 'seal-b', 'k1', 600)$$,
    'TQ005', null, 'a second, different answer'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "first"}', 'seal-other', 'k1', 600)$$,
    'TQ005', null, 'the same step with another seal'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select tiq_test.take_over(tiq_test.rid(1), 'p2');
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 3, 2, '{"text": "again"}', 'seal-c', 'k1', 600)$$,
    'TQ005', null, 'the adopter cannot seal another answer'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 3, 1, '{"text": "first"}', 'seal-a', 'k1', 600)$$,
    'TQ005', null, 'nor replay the first attempt''s seal at its own epoch'
);

select * from finish();
rollback;
