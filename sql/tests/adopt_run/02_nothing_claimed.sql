-- adopt_run: no row when nothing is claimed; running and finished runs are
-- never adopted.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select is_empty($$select 1 from ticketiq.adopt_run('p2', 8)$$, 'an empty database: no row');

select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.fail_run(tiq_test.rid(2), 1, 'refused');
select tiq_test.advance(20);
select tiq_test.save_fingerprint();

select is_empty(
    $$select 1 from ticketiq.adopt_run('p2', 8)$$,
    'a lapsed but unswept run and a failed run: no row'
);
select is_empty(
    $$select 1 from ticketiq.adopt_run('p2', 8, tiq_test.rid(1))$$,
    'not even when asked for by id'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
