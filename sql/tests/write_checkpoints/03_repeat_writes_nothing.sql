-- write_checkpoints: the same statement again (a retry after a lost
-- connection) writes nothing and returns nothing: each run's last step moved
-- on, so each checkpoint goes to write_checkpoint, which says replayed.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));

select is(
    (select count(*) from ticketiq.write_checkpoints(
        array[tiq_test.rid(1), tiq_test.rid(2)], array[1, 1]::bigint[], array[1, 1],
        jsonb_build_array(tiq_test.body(jsonb_build_array(tiq_test.call('w', 'write'))), tiq_test.body()),
        array['s1', 's2'], array['k1', 'k1'])),
    2::bigint,
    'the first statement writes both'
);
select is(
    (select count(*) from ticketiq.write_checkpoints(
        array[tiq_test.rid(1), tiq_test.rid(2)], array[1, 1]::bigint[], array[1, 1],
        jsonb_build_array(tiq_test.body(jsonb_build_array(tiq_test.call('w', 'write'))), tiq_test.body()),
        array['s1', 's2'], array['k1', 'k1'])),
    0::bigint,
    'the repeat writes none'
);
select results_eq(
    $$select (select count(*) from ticketiq.checkpoints), (select count(*) from ticketiq.calls)$$,
    $$values (2::bigint, 1::bigint)$$,
    'two checkpoints and one calls row, as after the first'
);
select is(
    (select w.replayed from ticketiq.write_checkpoint(
        tiq_test.rid(1), 1, 1, tiq_test.body(jsonb_build_array(tiq_test.call('w', 'write'))), 's1', 'k1') as w),
    true,
    'write_checkpoint recognises the repeat'
);

select * from finish();
rollback;
