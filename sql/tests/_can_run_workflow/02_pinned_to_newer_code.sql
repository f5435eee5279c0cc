-- _can_run_workflow: once newer code took a step of a run (counters.workflow.code
-- in its last checkpoint), only a process that runs that code's version runs it:
-- the older code may lack the step the newer one led it to.
begin;
select plan(3);

select ok(not ticketiq._can_run_workflow('{"flow": ["1"]}',
    tiq_test.workflow_body('1'), tiq_test.workflow_body('1', code => '2')),
    'the old code does not run a run version 2''s code stepped');
select ok(ticketiq._can_run_workflow('{"flow": ["2", "1"]}',
    tiq_test.workflow_body('1'), tiq_test.workflow_body('1', code => '2')),
    'the new code, which runs version 1 too, does');
select ok(not ticketiq._can_run_workflow('{"flow": ["2"]}',
    tiq_test.workflow_body('1'), tiq_test.workflow_body('1', code => '2')),
    'and the pin does not stand in for the run''s own version');

select * from finish();
rollback;
