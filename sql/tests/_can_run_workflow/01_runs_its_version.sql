-- _can_run_workflow: a process runs a run whose version it declared for that
-- workflow; not another version, not another workflow, not without a declaration.
begin;
select plan(5);

select ok(ticketiq._can_run_workflow('{"flow": ["2", "1"]}',
    tiq_test.workflow_body('1'), tiq_test.workflow_body('1')),
    'a version it runs (as compatible)');
select ok(not ticketiq._can_run_workflow('{"flow": ["2"]}',
    tiq_test.workflow_body('1'), tiq_test.workflow_body('1')),
    'not a version it does not run');
select ok(not ticketiq._can_run_workflow('{"other": ["1"]}',
    tiq_test.workflow_body('1'), null),
    'not another workflow''s');
select ok(not ticketiq._can_run_workflow(null, tiq_test.workflow_body('1'), null),
    'not without a declaration (the caller decides what no declaration means)');
select ok(ticketiq._can_run_workflow('{"flow": ["1"]}', tiq_test.workflow_body('1'), null),
    'no last checkpoint (an answer sealed): the version decides');

select * from finish();
rollback;
