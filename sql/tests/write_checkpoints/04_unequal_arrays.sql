-- write_checkpoints: arrays of different lengths, a null run id or bodies
-- that are not one JSON array raise TQ004 and write nothing.
begin;
select plan(5);

select tiq_test.new_run('p1', 8, tiq_test.rid(1));

select throws_ok(
    $$select * from ticketiq.write_checkpoints(array[tiq_test.rid(1)], array[1, 1]::bigint [], array[1],
        jsonb_build_array(tiq_test.body()), array['s'], array['k1'])$$,
    'TQ004', null, 'epochs longer than run ids'
);
select throws_ok(
    $$select * from ticketiq.write_checkpoints(array[tiq_test.rid(1)], array[1]::bigint [], array[1],
        jsonb_build_array(tiq_test.body(), tiq_test.body()), array['s'], array['k1'])$$,
    'TQ004', null, 'more bodies than run ids'
);
select throws_ok(
    $$select * from ticketiq.write_checkpoints(array[tiq_test.rid(1)], array[1]::bigint [], array[1],
        tiq_test.body(), array['s'], array['k1'])$$,
    'TQ004', null, 'bodies not an array'
);
select throws_ok(
    $$select * from ticketiq.write_checkpoints(array[null, tiq_test.rid(1)]::uuid [], array[1, 1]::bigint [],
        array[1, 1], jsonb_build_array(tiq_test.body(), tiq_test.body()), array['s', 's'], array['k1', 'k1'])$$,
    'TQ004', null, 'a null run id'
);
select is((select count(*) from ticketiq.checkpoints), 0::bigint, 'nothing written');

select * from finish();
rollback;
