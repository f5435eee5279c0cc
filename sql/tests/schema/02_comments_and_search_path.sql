-- schema: every ticketiq function has a COMMENT and pins search_path in
-- proconfig (pg_catalog, pg_temp), so a caller's search_path can never
-- redirect a SECURITY DEFINER function to objects of its own.
begin;
select plan(5);

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

select * from finish();
rollback;
