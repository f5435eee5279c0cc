-- declare_workflows: the process's row records {name: runs}; each version is
-- recorded with its kind and signals, the newest declaration winning.
begin;
select plan(4);

select ticketiq.register_process('old', 'h', 1);
select is(
    ticketiq.declare_workflows('old', $$[
        {"name": "flow", "version": "1", "kind": "flow", "runs": ["1"], "signals": ["go", "ack"]},
        {"name": "other", "version": "3", "kind": "other", "runs": ["2", "3"], "signals": null}
    ]$$),
    2, 'two workflows declared'
);
select is(
    (select p.workflows from ticketiq.processes as p where p.process_id = 'old'),
    '{"flow": ["1"], "other": ["2", "3"]}'::jsonb,
    'the process runs flow 1, other 2 and 3'
);
select ticketiq.register_process('new', 'h', 2);
select ticketiq.declare_workflows('new', $$[
    {"name": "flow", "version": "1", "kind": "flow", "runs": ["1"], "signals": ["go"]}
]$$);
select results_eq(
    $$select w.name, w.version, w.kind, w.signals, w.declared_by
      from ticketiq.workflow_versions as w order by 1, 2$$,
    $$values ('flow'::text, '1'::text, 'flow'::text, array['go']::text[], 'new'::text),
        ('other', '3', 'other', null, 'old')$$,
    'each version with its kind and signals, the newest declaration winning'
);
select ticketiq.declare_workflows('new', '[]');
select is(
    (select p.workflows from ticketiq.processes as p where p.process_id = 'new'),
    '{}'::jsonb, 'an app with no workflows declares none: it adopts no workflow run'
);

select * from finish();
rollback;
