-- purge_history: at most p_limit runs a call; repeated calls take the rest.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(n)) from generate_series(1, 3) as n;
select ticketiq.fail_run(tiq_test.rid(n), 1, 'model refused') from generate_series(1, 3) as n;
select tiq_test.advance(3600);

select is((select p.runs_purged from ticketiq.purge_history(60, 2) as p), 2, 'limit 2: two runs');
select is((select p.runs_purged from ticketiq.purge_history(60, 2) as p), 1, 'then the last one');
select is((select p.runs_purged from ticketiq.purge_history(60, 2) as p), 0, 'then none');

select * from finish();
rollback;
