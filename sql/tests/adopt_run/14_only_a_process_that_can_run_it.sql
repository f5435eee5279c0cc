-- adopt_run: a workflow run stays on the version its first checkpoint names;
-- a process that declared its workflows adopts it only if it can run that
-- version (a rolling deploy's new worker leaves an old run to the old
-- worker); agent runs, and holders that declared nothing, as before.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.deploy_pair();

select is_empty($$select 1 from ticketiq.adopt_run('new', 8)$$,
    'the new worker does not adopt a run of version 1');
select is_empty($$select 1 from ticketiq.adopt_run('new', 8, tiq_test.rid(1))$$,
    'not even asked for it by id');
select is((select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'claimed',
    'left claimed, not failed');
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.lose(tiq_test.rid(2));
select is((select a.run_id from ticketiq.adopt_run('new', 8) as a), tiq_test.rid(2),
    'an agent run is adopted by any process, past the run it cannot run');
select is((select a.run_id from ticketiq.adopt_run('old', 8) as a), tiq_test.rid(1),
    'the old worker, which runs version 1, adopts it');
select tiq_test.workflow_run(tiq_test.rid(3), 'flow', '1');
select tiq_test.lose(tiq_test.rid(3));
select is((select a.run_id from ticketiq.adopt_run('undeclared', 8, tiq_test.rid(3)) as a), tiq_test.rid(3),
    'a holder that declared nothing adopts any run');

-- before its first checkpoint: a process with a workflow of its kind, not one without
select ticketiq.start_run(
    p_holder => 'p1', p_owner => 'o', p_run_as => 'workflow', p_channel => 'web', p_entry_point => 'flow',
    p_may_wait => false, p_ttl_seconds => 8, p_input => '{}', p_correlation_id => null,
    p_idempotency_key => null, p_meta => '{}', p_run_id => tiq_test.rid(4), p_parent_run_id => null);
select tiq_test.lose(tiq_test.rid(4));
select ticketiq.register_process('agents', 'h', 3);
select ticketiq.declare_workflows('agents', '[]');
select is_empty($$select 1 from ticketiq.adopt_run('agents', 8, tiq_test.rid(4))$$,
    'a process with no workflow of its kind does not take it for an agent run');
select is((select a.run_id from ticketiq.adopt_run('new', 8, tiq_test.rid(4)) as a), tiq_test.rid(4),
    'a process with a version of its workflow adopts it');

select * from finish();
rollback;
