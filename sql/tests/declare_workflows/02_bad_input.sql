-- declare_workflows: a malformed declaration is TQ004, an unknown process
-- TQ011, and neither writes anything.
begin;
select plan(9);

select ticketiq.register_process('p1', 'h', 1);
select throws_ok($$select ticketiq.declare_workflows('p1', null)$$, 'TQ004', null, 'null');
select throws_ok($$select ticketiq.declare_workflows('p1', '{}')$$, 'TQ004', null, 'not an array');
select throws_ok($$select ticketiq.declare_workflows('p1', '[1]')$$, 'TQ004', null, 'not an object');
select throws_ok(
    $$select ticketiq.declare_workflows('p1', '[{"name": "f", "version": "1", "kind": "f", "runs": ["2"]}]')$$,
    'TQ004', null, 'runs without its own version'
);
select throws_ok(
    $$select ticketiq.declare_workflows('p1', jsonb_build_array(jsonb_build_object(
        'name', repeat('n', 101), 'version', '1', 'kind', 'f', 'runs', jsonb_build_array('1'))))$$,
    'TQ004', null, 'a name past 100 characters'
);
select throws_ok(
    $$select ticketiq.declare_workflows('p1',
        '[{"name": "f", "version": "1", "kind": "f", "runs": ["1"], "signals": [""]}]')$$,
    'TQ004', null, 'an empty signal name'
);
select throws_ok(
    $$select ticketiq.declare_workflows('p1', '[{"name": "f", "version": "1", "kind": "f", "runs": ["1"]},
        {"name": "f", "version": "2", "kind": "f", "runs": ["2"]}]')$$,
    'TQ004', null, 'one workflow declared twice'
);
select throws_ok(
    $$select ticketiq.declare_workflows('nobody', '[{"name": "f", "version": "1", "kind": "f", "runs": ["1"]}]')$$,
    'TQ011', null, 'an unknown process'
);
select ok(
    not exists (select 1 from ticketiq.workflow_versions)
    and (select p.workflows from ticketiq.processes as p where p.process_id = 'p1') is null,
    'nothing written'
);

select * from finish();
rollback;
