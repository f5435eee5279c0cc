-- mark_calls_in_doubt: fenced like every write of an attempt, through the
-- one fence (ticketiq._fence, kind run): the shared cases of
-- tiq_test.fenced (I1, I15).
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select * from tiq_test.fenced(
    'run',
    $$select ticketiq.mark_calls_in_doubt(%1$L, %2$s, 1, '[{"call_id": "w1"}, {"call_id": "w2"}]')$$,
    $$select tiq_test.checkpoint(%1$L, 1, 1,
        jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write')))$$
);

select * from finish();
rollback;
