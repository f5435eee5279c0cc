-- record_resumes: arrays of different lengths or dimensions, a null run id
-- or settlements that are not one JSON array raise TQ004.
begin;
select plan(5);

select tiq_test.new_run('p1', 8, tiq_test.rid(1));

select throws_ok(
    $$select * from ticketiq.record_resumes(array[tiq_test.rid(1)], array[1, 1]::bigint [], '[[]]')$$,
    'TQ004', null, 'epochs longer than run ids'
);
select throws_ok(
    $$select * from ticketiq.record_resumes(array[tiq_test.rid(1)], array[1]::bigint [], '[[], []]')$$,
    'TQ004', null, 'more settlement arrays than run ids'
);
select throws_ok(
    $$select * from ticketiq.record_resumes(array[tiq_test.rid(1)], array[1]::bigint [], '{}')$$,
    'TQ004', null, 'settlements not an array'
);
select throws_ok(
    $$select * from ticketiq.record_resumes(array[null, tiq_test.rid(1)]::uuid [], array[1, 1]::bigint [],
        '[[], []]')$$,
    'TQ004', null, 'a null run id'
);
select throws_ok(
    $$select * from ticketiq.record_resumes(array[[tiq_test.rid(1)]], array[[1]]::bigint [], '[[]]')$$,
    'TQ004', null, 'two-dimensional arrays'
);

select * from finish();
rollback;
