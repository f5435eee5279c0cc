-- hand_on_answer: fenced (I1), so only the run's current attempt hands its
-- answer on: unknown TQ001, lapsed TQ003, stale TQ002; the adopter hands on.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 'ans-seal', 'k2', 600);

select throws_ok($$select ticketiq.hand_on_answer(tiq_test.rid(99), 1)$$, 'TQ001', null, 'unknown run');
select tiq_test.advance(8);
select throws_ok(
    $$select ticketiq.hand_on_answer(tiq_test.rid(1), 1)$$, 'TQ003', null,
    'the lease lapsed before the hand-on'
);
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select throws_ok(
    $$select ticketiq.hand_on_answer(tiq_test.rid(1), 1)$$, 'TQ002', null,
    'the old attempt after the takeover'
);
select is(
    (select h.body from ticketiq.hand_on_answer(tiq_test.rid(1), 3) as h), '{"text": "Done."}'::jsonb,
    'the adopter hands the same answer on'
);
select is(
    (select a.handed_on_epoch from ticketiq.answers as a where a.run_id = tiq_test.rid(1)), 3::bigint,
    'handed on by epoch 3'
);

select * from finish();
rollback;
