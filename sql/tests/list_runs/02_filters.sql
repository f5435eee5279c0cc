-- list_runs: each filter narrows the list: status, kind, owner, workflow (its
-- first checkpoint's), created and ended ranges, failure reason.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.write_checkpoint(
    tiq_test.rid(1), 1, 1,
    tiq_test.body() || jsonb_build_object(
        'counters', jsonb_build_object('workflow', jsonb_build_object('name', 'escalation', 'version', '2'))
    ),
    's1', 'k1'
);
select tiq_test.advance(10);
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.fail_run(tiq_test.rid(2), 1, 'the model failed: 500', 'agent.run.failed');

select results_eq(
    $$select l.run_id from ticketiq.list_runs(p_statuses => array['failed']) as l$$,
    $$values (tiq_test.rid(2))$$, 'by status'
);
select results_eq(
    $$select l.run_id, l.workflow, l.workflow_version from ticketiq.list_runs(p_workflow => 'escalation') as l$$,
    $$values (tiq_test.rid(1), 'escalation'::text, '2'::text)$$, 'by workflow, with its version'
);
select is(
    (select count(*) from ticketiq.list_runs(p_kind => 'cron')), 0::bigint, 'by kind'
);
select results_eq(
    $$select l.run_id from ticketiq.list_runs(p_created_from => '2030-01-01 00:00:05+00') as l$$,
    $$values (tiq_test.rid(2))$$, 'created since'
);
select results_eq(
    $$select l.run_id from ticketiq.list_runs(p_created_to => '2030-01-01 00:00:05+00') as l$$,
    $$values (tiq_test.rid(1))$$, 'created before'
);
select results_eq(
    $$select l.run_id from ticketiq.list_runs(p_ended_from => '2030-01-01 00:00:00+00') as l$$,
    $$values (tiq_test.rid(2))$$, 'ended since (an unfinished run has not ended)'
);
select results_eq(
    $$select l.run_id from ticketiq.list_runs(p_failure => 'model failed') as l$$,
    $$values (tiq_test.rid(2))$$, 'by failure reason'
);

select * from finish();
rollback;
