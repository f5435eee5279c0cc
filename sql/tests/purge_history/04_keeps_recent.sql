-- purge_history: a run that finished less than the age ago, by the database
-- clock, is kept; it goes once it is that old.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.fail_run(tiq_test.rid(1), 1, 'model refused');

select tiq_test.advance(199);
select is((select p.runs_purged from ticketiq.purge_history(200) as p), 0, 'finished 199 s ago: kept');
select is((select count(*)::integer from ticketiq.audit), 2, 'and its audit rows');
select tiq_test.advance(1);
select is((select p.runs_purged from ticketiq.purge_history(200) as p), 1, 'finished 200 s ago: purged');
select is((select count(*)::integer from ticketiq.audit), 0, 'with its audit rows');

select * from finish();
rollback;
