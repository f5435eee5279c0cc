-- request_approval: fenced like every write of an attempt, through the one fence
-- (ticketiq._fence, kind run): the shared cases of tiq_test.fenced (I1,
-- I15).
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select * from tiq_test.fenced(
    'run',
    $$select ticketiq.request_approval(%1$L, %2$s, 1, 'w1')$$,
    $$select tiq_test.checkpoint(%1$L, %2$s, 1, jsonb_build_array(tiq_test.call('w1', 'write')))$$
);
select is(
    (select count(*) from ticketiq.approval_requests as a where a.run_id = tiq_test.rid(900)), 0::bigint,
    'nothing filed'
);

select * from finish();
rollback;
