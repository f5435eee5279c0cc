-- finish_job: fenced like every write of an attempt, through the one fence
-- (ticketiq._fence, kind job): a stalled worker cannot complete a job
-- another worker runs; the shared cases of tiq_test.fenced (I1, I15).
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select * from tiq_test.fenced(
    'job',
    $$select ticketiq.finish_job(%1$L, %2$s, '{"pages": 1}')$$,
    null
);

select * from finish();
rollback;
