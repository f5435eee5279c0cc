-- unrunnable_runs: the claimed and suspended workflow runs whose version no
-- live process can run; none while a live process declared nothing; a
-- stopped process's declaration does not count.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.workflow_run(tiq_test.rid(1), 'flow', '1');
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.workflow_run(tiq_test.rid(2), 'flow', '1');
select ticketiq.wait_run(tiq_test.rid(2), 1, 'k2', 'signal:00000000-0000-0000-0000-000000000002:go');
select tiq_test.workflow_run(tiq_test.rid(3), 'flow', '2');
select tiq_test.lose(tiq_test.rid(3));
select tiq_test.new_run('p1', 8, tiq_test.rid(4));
select tiq_test.lose(tiq_test.rid(4));

select ticketiq.register_process('undeclared', 'h', 3);
select is_empty($$select 1 from ticketiq.unrunnable_runs()$$,
    'none while a live process declared nothing (it runs any run)');
select ticketiq.release_liveness('undeclared');
update ticketiq.processes set stopped_at = ticketiq.now() where process_id = 'undeclared';
select ticketiq.register_process('new', 'h', 1);
select ticketiq.declare_workflows('new', '[{"name": "flow", "version": "2", "kind": "flow", "runs": ["2"]}]');
select results_eq(
    $$select u.run_id, u.status, u.workflow, u.workflow_version, u.wait_key
      from ticketiq.unrunnable_runs() as u order by u.run_id$$,
    $$values (tiq_test.rid(1), 'claimed'::text, 'flow'::text, '1'::text, null::text),
        (tiq_test.rid(2), 'suspended', 'flow', '1', 'signal:00000000-0000-0000-0000-000000000002:go')$$,
    'the runs of version 1, claimed and asleep; not version 2 nor the agent run'
);
select ticketiq.register_process('old', 'h', 2);
select ticketiq.declare_workflows('old', '[{"name": "flow", "version": "1", "kind": "flow", "runs": ["1"]}]');
select is_empty($$select 1 from ticketiq.unrunnable_runs()$$, 'none once the old worker is up');
update ticketiq.processes set stopped_at = ticketiq.now() where process_id = 'old';
select is((select count(*)::integer from ticketiq.unrunnable_runs()), 2,
    'a stopped process does not count');
select is((select count(*)::integer from ticketiq.unrunnable_runs(1)), 1, 'at most p_limit rows');
select is((select u.run_id from ticketiq.unrunnable_runs(10, 'claimed') as u), tiq_test.rid(1),
    'only the claimed ones, asked for');

select * from finish();
rollback;
