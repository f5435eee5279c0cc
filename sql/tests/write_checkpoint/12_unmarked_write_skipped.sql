-- write_checkpoint: a changing call of step n never marked in doubt cannot
-- have been made (I5): writing step n + 1 closes it as settled, settlement
-- skipped, whatever its classification (write, delegation, ...); reads and
-- calls marked in doubt close as done, made; none is left for a resume.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(
        tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'),
        tiq_test.call('d1', 'delegation'), tiq_test.call('s1', 'subagent_with_tools')
    )
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2');
select tiq_test.advance(2);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2);

select results_eq(
    $$select c.call_id, c.state, c.settlement, c.finished_epoch
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 1 order by c.ordinal$$,
    $$values ('r1'::text, 'done'::text, 'made'::text, 1::bigint),
             ('w1', 'settled', 'skipped', 1),
             ('w2', 'done', 'made', 1),
             ('d1', 'settled', 'skipped', 1),
             ('s1', 'settled', 'skipped', 1)$$,
    'the unmarked changing calls are skipped; the read and the marked write are made'
);
select is(
    (
        select array_agg(distinct c.finished_at) from ticketiq.calls as c
        where c.run_id = tiq_test.rid(1) and c.step = 1
    ),
    array['2030-01-01 00:00:02+00'::timestamptz],
    'all closed at the step 2 write'
);
select is(
    (
        select array_agg(c.outcome) from ticketiq.calls as c
        where c.run_id = tiq_test.rid(1) and c.step = 1 and c.settlement = 'skipped'
    ),
    array[null, null, null]::jsonb[],
    'a skipped call has no outcome'
);
select is(
    (
        select count(*) from ticketiq.calls as c
        where c.run_id = tiq_test.rid(1) and c.step = 1 and c.state in ('pending', 'in_doubt')
    ),
    0::bigint,
    'no call of step 1 is left open'
);

select * from finish();
rollback;
