-- _adoptable: the claimed runs, the oldest claimed first, at most the
-- limit; given a run id, that run alone; running runs never; nothing is
-- written.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
-- leases of 1, 3 and 5 s: each lapses, and is claimed, after the one before
select tiq_test.new_run('p1', 1, tiq_test.rid(1));
select tiq_test.new_run('p1', 3, tiq_test.rid(2));
select tiq_test.new_run('p1', 5, tiq_test.rid(3));
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(2));
select tiq_test.lose(tiq_test.rid(3));
select tiq_test.new_run('p1', 60, tiq_test.rid(4));  -- running: never chosen
select tiq_test.save_fingerprint();

select is(
    array(select c.run_id from ticketiq._adoptable('w1', null, 2) as c (run_id)),
    array[tiq_test.rid(1), tiq_test.rid(2)], 'the two claimed first, in that order'
);
select is(
    array(select c.run_id from ticketiq._adoptable('w1', null, 10) as c (run_id)),
    array[tiq_test.rid(1), tiq_test.rid(2), tiq_test.rid(3)], 'every claimed run within the limit'
);
select is(
    array(select c.run_id from ticketiq._adoptable('w1', tiq_test.rid(2), 10) as c (run_id)),
    array[tiq_test.rid(2)], 'given a run id, that run alone'
);
select is_empty(
    $$select 1 from ticketiq._adoptable('w1', tiq_test.rid(4), 10)$$, 'a running run: not chosen'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
