-- schema: the tables, operator views and the adopted_run type exist, and
-- schema_version() is 2 with both migrations recorded.
begin;
select plan(11);

select tables_are(
    'ticketiq',
    array[
        'schema_migrations', 'config', 'processes', 'runs', 'checkpoints', 'calls', 'answers',
        'transcript_entries', 'audit', 'leader_leases', 'approval_requests'
    ]
);
select views_are('ticketiq', array['runs_in_flight', 'calls_in_doubt', 'resume_audit', 'approvals_waiting']);
select is(ticketiq.schema_version(), 2, 'schema_version() is 2');
select results_eq(
    $$select m.version, m.name from ticketiq.schema_migrations as m order by m.version$$,
    $$values (1, 'core'::text), (2, 'approvals_delegation')$$,
    'migrations 1 (core) and 2 (approvals_delegation) are recorded'
);
select results_eq(
    $$select c.id, c.fake_clock_allowed from ticketiq.config as c$$,
    $$values (true, false)$$,
    'one config row; the fake clock is off'
);
select throws_ok(
    $$insert into ticketiq.config (id) values (false)$$,
    '23514', null, 'config has one row only'
);
select isnt(obj_description('ticketiq.runs_in_flight'::regclass, 'pg_class'), null, 'runs_in_flight has a comment');
select isnt(
    obj_description('ticketiq.approvals_waiting'::regclass, 'pg_class'), null, 'approvals_waiting has a comment'
);
select has_type('ticketiq', 'adopted_run', 'the composite type ticketiq.adopted_run exists');
select has_column('ticketiq', 'calls', 'approval_id', 'calls.approval_id records a held call''s request');
select has_column('ticketiq', 'runs', 'parent_run_id', 'runs.parent_run_id records a delegation''s parent');

select * from finish();
rollback;
