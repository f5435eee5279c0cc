-- fail_unrunnable_runs: a claimed workflow run no live process can run is
-- failed once it waited past the limit, with a reason naming its version
-- and audited; a younger one and a suspended one wait on.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.register_process('new', 'h', 1);
select ticketiq.declare_workflows('new', '[{"name": "flow", "version": "2", "kind": "flow", "runs": ["2"]}]');
select tiq_test.workflow_run(tiq_test.rid(1), 'flow', '1');
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.workflow_run(tiq_test.rid(2), 'flow', '1');
select ticketiq.wait_run(tiq_test.rid(2), 1, 'k2', 'signal:00000000-0000-0000-0000-000000000002:go');
select tiq_test.advance(100);
select tiq_test.workflow_run(tiq_test.rid(3), 'flow', '1');
select tiq_test.lose(tiq_test.rid(3));

select is_empty($$select 1 from ticketiq.fail_unrunnable_runs('new', 1000)$$,
    'within the limit: nothing failed');
select results_eq(
    $$select f.run_id, f.workflow, f.workflow_version from ticketiq.fail_unrunnable_runs('new', 50) as f$$,
    $$values (tiq_test.rid(1), 'flow'::text, '1'::text)$$,
    'past the limit: the claimed run that waited longer'
);
select results_eq(
    $$select r.run_id, r.status::text from ticketiq.runs as r
      where r.run_id in (tiq_test.rid(1), tiq_test.rid(2), tiq_test.rid(3)) order by 1$$,
    $$values (tiq_test.rid(1), 'failed'::text), (tiq_test.rid(2), 'suspended'), (tiq_test.rid(3), 'claimed')$$,
    'the suspended run and the younger one wait on'
);
select matches(
    (select r.failure_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    'no live worker can run workflow flow version 1', 'the reason names the version'
);
select is(
    (select a.actor from ticketiq.audit as a
     where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.workflow_version_unavailable'),
    'new', 'audited agent.run.workflow_version_unavailable'
);
select is_empty($$select 1 from ticketiq.fail_unrunnable_runs('new', 50)$$, 'a repeat fails nothing more');

select * from finish();
rollback;
