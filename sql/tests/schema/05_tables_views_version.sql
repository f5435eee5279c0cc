-- schema: the tables and operator views exist, and schema_version() is 1.
begin;
select plan(7);

select tables_are(
    'ticketiq',
    array[
        'schema_migrations', 'config', 'processes', 'runs', 'checkpoints', 'calls', 'answers',
        'transcript_entries', 'audit', 'leader_leases'
    ]
);
select views_are('ticketiq', array['runs_in_flight', 'calls_in_doubt', 'resume_audit']);
select is(ticketiq.schema_version(), 1, 'schema_version() is 1');
select results_eq(
    $$select m.version, m.name from ticketiq.schema_migrations as m order by m.version$$,
    $$values (1, 'core'::text)$$,
    'migration 1 (core) is recorded'
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

select * from finish();
rollback;
