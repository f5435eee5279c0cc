-- unrunnable_runs: a process that holds no liveness token (TICKETIQ_LIVENESS_INTERVAL=0)
-- counts as live only while it was seen (a lease renewal, its idle heartbeat) within
-- 30 s by the database clock: one SIGKILLed is never marked stopped, and would otherwise
-- hide the runs only it could run for ever.  One that holds a token counts until the
-- liveness watch marks it stopped.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.deploy_pair();

select is_empty($$select 1 from ticketiq.unrunnable_runs()$$, 'the old process, just seen, runs it');
select tiq_test.advance(29);
select ticketiq.renew_leases('new', '{}', '{}', 8, 'run');
select is_empty($$select 1 from ticketiq.unrunnable_runs()$$, 'seen 29 s ago: still live');
select tiq_test.advance(2);
select is((select u.run_id from ticketiq.unrunnable_runs() as u), tiq_test.rid(1),
    'not seen for 31 s and no liveness token: it no longer counts (SIGKILLed, never stopped)');
select ticketiq.renew_leases('old', '{}', '{}', 8, 'run');
select is_empty($$select 1 from ticketiq.unrunnable_runs()$$,
    'a renewal (an empty one: the idle heartbeat) makes it count again');
select tiq_test.advance(60);
update ticketiq.processes set liveness_key = 7, liveness_since = ticketiq.now()
where process_id = 'old';
select is_empty($$select 1 from ticketiq.unrunnable_runs()$$,
    'a process holding a liveness token counts until the watch marks it stopped');
update ticketiq.processes set liveness_key = null where process_id = 'old';
select ticketiq.register_process('undeclared', 'h', 3);
select tiq_test.advance(31);
select is((select count(*)::integer from ticketiq.unrunnable_runs()), 1,
    'nor does a process that declared nothing, unseen for 31 s');

select * from finish();
rollback;
