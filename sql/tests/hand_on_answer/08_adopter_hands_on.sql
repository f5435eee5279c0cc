-- hand_on_answer: the attempt that took the run over hands on the answer
-- its lost predecessor sealed, by its own epoch.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 'ans-seal', 'k2', 600);
select tiq_test.advance(9);
select tiq_test.take_over(tiq_test.rid(1), 'p2');

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
