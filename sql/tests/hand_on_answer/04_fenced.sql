-- hand_on_answer: fenced (I1), so only the run's current attempt hands its
-- answer on, through the one fence (ticketiq._fence, kind run); the shared
-- cases of tiq_test.fenced (I1, I15), with an answer sealed first.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select * from tiq_test.fenced(
    'run',
    $$select ticketiq.hand_on_answer(%1$L, %2$s)$$,
    $$select ticketiq.seal_answer(%1$L, %2$s, 1, '{"text": "Done."}', 'ans-seal', 'k2', 600)$$
);

select * from finish();
rollback;
