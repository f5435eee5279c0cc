-- seal_answer: fenced like every write of an attempt, through the one fence
-- (ticketiq._fence, kind run): the shared cases of tiq_test.fenced (I1,
-- I15).
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select * from tiq_test.fenced(
    'run',
    $$select ticketiq.seal_answer(%1$L, %2$s, 1, '{}', 's', 'k', 60)$$,
    null
);
select is(
    (select count(*) from ticketiq.answers as a where a.run_id = tiq_test.rid(900)), 0::bigint,
    'no answer sealed'
);

select * from finish();
rollback;
