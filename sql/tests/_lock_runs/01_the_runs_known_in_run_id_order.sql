-- _lock_runs: the known runs of the array, in run id order, once each; an
-- unknown run and a null lock nothing.
begin;
select plan(2);

select tiq_test.new_run('p1', 8, tiq_test.rid(n)) from generate_series(1, 3) as n;

select is(
    ticketiq._lock_runs(array[tiq_test.rid(3), null, tiq_test.rid(1), tiq_test.rid(3),
        '00000000-0000-0000-0000-0000000000ff'::uuid]),
    array[tiq_test.rid(1), tiq_test.rid(3)],
    'the known runs, in run id order, once each'
);
select is(ticketiq._lock_runs('{}'), '{}'::uuid[], 'none: an empty array');

select * from finish();
rollback;
