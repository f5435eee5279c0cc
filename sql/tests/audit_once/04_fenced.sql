-- audit_once: fenced like every write of an attempt, through the one fence
-- (ticketiq._fence, kind run): the shared cases of tiq_test.fenced (I1,
-- I15).
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select * from tiq_test.fenced(
    'run',
    $$select ticketiq.audit_once(%1$L, %2$s, 'agent.run.guarantee_downgraded', 'w1', '{}')$$,
    null
);

select * from finish();
rollback;
