-- record_outcome: fenced like every write of an attempt, through the one fence
-- (ticketiq._fence, kind run): the shared cases of tiq_test.fenced (I1,
-- I15).
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select * from tiq_test.fenced(
    'run',
    $$select ticketiq.record_outcome(%1$L, %2$s, 1, 'w1', '{}', 'made')$$,
    $$select tiq_test.checkpoint(%1$L, %2$s, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
    select ticketiq.mark_in_doubt(%1$L, %2$s, 1, 'w1')$$
);
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(900) and c.call_id = 'w1'),
    'in_doubt', 'the call is still in doubt for the resume to settle'
);

select * from finish();
rollback;
