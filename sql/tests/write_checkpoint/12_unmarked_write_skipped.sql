-- write_checkpoint: a changing call of step n never marked in doubt cannot
-- have been made (I5): writing step n + 1 closes it as settled, settlement
-- skipped, whatever its classification (write, delegation, ...); calls
-- marked in doubt (a read marked as a write included) close as done, made;
-- none is left for a resume.  A read never marked has no row to close.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(
        tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'),
        tiq_test.call('d1', 'delegation'), tiq_test.call('s1', 'subagent_with_tools'), tiq_test.call('r2', 'read')
    )
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r2', 'write');
select tiq_test.advance(2);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2);

select results_eq(
    $$select c.call_id, c.state, c.settlement, c.finished_epoch
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 1 order by c.ordinal$$,
    $$values ('w1'::text, 'settled'::text, 'skipped'::text, 1::bigint),
             ('w2', 'done', 'made', 1),
             ('d1', 'settled', 'skipped', 1),
             ('s1', 'settled', 'skipped', 1),
             ('r2', 'done', 'made', 1)$$,
    'the unmarked changing calls are skipped; the marked write and the read marked as a write are made'
);
select is(
    (select count(*) from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'r1'), 0::bigint,
    'the unmarked read r1 has no row'
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
