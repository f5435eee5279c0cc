-- unrunnable_runs: a run pinned to newer code (its last checkpoint's
-- counters.workflow.code) is listed while only processes of the older code live.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.deploy_pair();
update ticketiq.processes set stopped_at = ticketiq.now() where process_id = 'new';
select ticketiq.register_process('both', 'h', 3);
select ticketiq.declare_workflows('both',
    '[{"name": "flow", "version": "2", "kind": "flow", "runs": ["2", "1"]}]');
select count(*) from ticketiq.adopt_run('both', 8, tiq_test.rid(1));
select ticketiq.write_checkpoint(tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 2,
    jsonb_set(tiq_test.body(), '{counters,workflow}',
        '{"name": "flow", "version": "1", "code": "2", "at": "new_step"}'),
    'seal-2', 'k1');
select tiq_test.lose(tiq_test.rid(1));
select is_empty($$select 1 from ticketiq.unrunnable_runs()$$,
    'runnable while the worker of the newer code lives');
update ticketiq.processes set stopped_at = ticketiq.now() where process_id = 'both';
select is((select u.run_id from ticketiq.unrunnable_runs() as u), tiq_test.rid(1),
    'listed once only the old code''s worker lives');

select * from finish();
rollback;
