-- seal_answer: fenced (I1): unknown TQ001, lapsed TQ003, stale TQ002.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));

select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(99), 1, 1, '{}', 's', 'k', 60)$$, 'TQ001', null, 'unknown run'
);
select tiq_test.advance(8);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{}', 's', 'k', 60)$$, 'TQ003', null, 'lapsed lease'
);
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{}', 's', 'k', 60)$$, 'TQ002', null,
    'the old attempt after a takeover'
);
select is(
    (select count(*) from ticketiq.answers as a where a.run_id = tiq_test.rid(1)), 0::bigint,
    'no answer sealed'
);

select * from finish();
rollback;
