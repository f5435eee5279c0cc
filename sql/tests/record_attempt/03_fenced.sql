-- record_attempt: fenced like every write of an attempt, through the one fence
-- (ticketiq._fence, kind run): the shared cases of tiq_test.fenced (I1,
-- I15).
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select * from tiq_test.fenced(
    'run',
    $$select ticketiq.record_attempt(%1$L, %2$s, 1, 'model', 'HTTP 503')$$,
    null
);
select is(
    (select count(*) from ticketiq.attempts as a where a.run_id = tiq_test.rid(900)), 0::bigint,
    'no attempt counted'
);

select * from finish();
rollback;
