-- roles: PUBLIC cannot execute any ticketiq function nor use the schema or
-- any table or view; a role with no grant of its own is refused (42501).
begin;
select plan(6);

select is(
    (
        select coalesce(array_agg(p.oid::regprocedure::text order by p.oid::regprocedure::text), '{}')
        from pg_proc as p
        where p.pronamespace = 'ticketiq'::regnamespace and has_function_privilege('public', p.oid, 'EXECUTE')
    ),
    '{}'::text[],
    'PUBLIC can execute no ticketiq function'
);
select is(
    (
        select coalesce(array_agg(c.relname::text order by c.relname), '{}')
        from pg_class as c
        where c.relnamespace = 'ticketiq'::regnamespace and c.relkind in ('r', 'v', 'S')
            and (
                has_table_privilege('public', c.oid, 'SELECT')
                or has_table_privilege('public', c.oid, 'INSERT')
                or has_table_privilege('public', c.oid, 'UPDATE')
                or has_table_privilege('public', c.oid, 'DELETE')
            )
    ),
    '{}'::text[],
    'PUBLIC has no privilege on any ticketiq table or view'
);
select is(has_schema_privilege('public', 'ticketiq', 'USAGE'), false, 'PUBLIC has no USAGE on the schema');

create role tiq_test_nobody nologin;
set local role tiq_test_nobody;
select throws_ok(
    $$select ticketiq.schema_version()$$, '42501', null, 'a role with no grant cannot reach the schema'
);
reset role;
grant usage on schema ticketiq to tiq_test_nobody;
set local role tiq_test_nobody;
select throws_ok(
    $$select ticketiq.start_run('x', 'o', 'ra', 'web', 'ep', false, 8)$$, '42501', null,
    'given USAGE alone, it still cannot execute an API function'
);
select throws_ok(
    $$select ticketiq.now()$$, '42501', null, 'not even now()'
);
reset role;

select * from finish();
rollback;
