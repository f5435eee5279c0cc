-- schema: every ticketiq function has a COMMENT and pins search_path in
-- proconfig (pg_catalog, pg_temp), so a caller's search_path can never
-- redirect a SECURITY DEFINER function to objects of its own.  Every
-- table, view, type and domain has a COMMENT too (the migration that creates
-- it or sql/comments.sql, applied after the migrations).
begin;
select plan(7);

select cmp_ok(
    (select count(*)::integer from pg_proc as p where p.pronamespace = 'ticketiq'::regnamespace), '>=', 25,
    'the functions are installed'
);
select is(
    (
        select coalesce(array_agg(p.oid::regprocedure::text order by p.oid::regprocedure::text), '{}')
        from pg_proc as p
        where p.pronamespace = 'ticketiq'::regnamespace and obj_description(p.oid, 'pg_proc') is null
    ),
    '{}'::text[],
    'every ticketiq function has a comment'
);
select is(
    (
        select coalesce(array_agg(p.oid::regprocedure::text order by p.oid::regprocedure::text), '{}')
        from pg_proc as p
        where p.pronamespace = 'ticketiq'::regnamespace
            and not exists (
                select 1 from unnest(p.proconfig) as c (setting) where c.setting like 'search_path=%'
            )
    ),
    '{}'::text[],
    'every ticketiq function sets search_path in proconfig'
);
select is(
    (
        select coalesce(array_agg(p.oid::regprocedure::text order by p.oid::regprocedure::text), '{}')
        from pg_proc as p
        where p.pronamespace = 'ticketiq'::regnamespace
            and not ('search_path=pg_catalog, pg_temp' = any(coalesce(p.proconfig, '{}')))
    ),
    '{}'::text[],
    'every search_path is pg_catalog, pg_temp (pg_temp last)'
);
select isnt(obj_description('ticketiq'::regnamespace, 'pg_namespace'), null, 'schema ticketiq has a comment');
select is(
    (
        select coalesce(array_agg(c.relname::text order by c.relname), '{}')
        from pg_class as c
        where c.relnamespace = 'ticketiq'::regnamespace and c.relkind in ('r', 'v')
            and obj_description(c.oid, 'pg_class') is null
    ),
    '{}'::text[],
    'every ticketiq table and view has a comment'
);
select is(
    (
        select coalesce(array_agg(t.typname::text order by t.typname), '{}')
        from pg_type as t
        where t.typnamespace = 'ticketiq'::regnamespace and t.typtype in ('c', 'd')
            and not exists (select 1 from pg_class as c where c.oid = t.typrelid and c.relkind <> 'c')
            and obj_description(t.oid, 'pg_type') is null
    ),
    '{}'::text[],
    'every ticketiq composite type and domain has a comment'
);

select * from finish();
rollback;
