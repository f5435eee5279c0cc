-- _can_run_workflow: a process runs a run whose version it declared for that
-- workflow; not another version, not another workflow, not without a declaration.
begin;
select plan(5);

select ok(ticketiq._can_run_workflow('{"flow": ["2", "1"]}',
    '{"counters": {"workflow": {"name": "flow", "version": "1"}}}',
    '{"counters": {"workflow": {"name": "flow", "version": "1"}}}'),
    'a version it runs (as compatible)');
select ok(not ticketiq._can_run_workflow('{"flow": ["2"]}',
    '{"counters": {"workflow": {"name": "flow", "version": "1"}}}',
    '{"counters": {"workflow": {"name": "flow", "version": "1"}}}'),
    'not a version it does not run');
select ok(not ticketiq._can_run_workflow('{"other": ["1"]}',
    '{"counters": {"workflow": {"name": "flow", "version": "1"}}}', null),
    'not another workflow''s');
select ok(not ticketiq._can_run_workflow(null,
    '{"counters": {"workflow": {"name": "flow", "version": "1"}}}', null),
    'not without a declaration (the caller decides what no declaration means)');
select ok(ticketiq._can_run_workflow('{"flow": ["1"]}',
    '{"counters": {"workflow": {"name": "flow", "version": "1"}}}', null),
    'no last checkpoint (an answer sealed): the version decides');

select * from finish();
rollback;
