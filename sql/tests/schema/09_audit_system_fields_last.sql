-- schema: audit rows whose system fields no caller can write (issue 46,
-- finding 5, for every writer).  A function that audits JSON a caller (or
-- another function) passed it (p_detail, p_meta) merges that first and its
-- own fields after (p_detail || jsonb_build_object(...)), so the row's
-- wait_key, step, step_key, due_at, key, outcome, reason, lapsed_holder ...
-- are the system's whatever the detail says.  Checked in every function of
-- schema ticketiq, not only those once found writing them in the wrong order.
begin;
select plan(2);

select is_empty(
    $$select p.proname::text
      from pg_catalog.pg_proc as p
      inner join pg_catalog.pg_namespace as n on p.pronamespace = n.oid
      where n.nspname = 'ticketiq' and p.prosrc ~ '\|\|\s*p_(detail|meta)\M'$$,
    'no function merges a passed detail after its own fields'
);
select cmp_ok(
    (select count(*)::integer
     from pg_catalog.pg_proc as p
     inner join pg_catalog.pg_namespace as n on p.pronamespace = n.oid
     where n.nspname = 'ticketiq' and p.prosrc ~ 'p_detail\s*\|\|'),
    '>=', 4, 'the writers that merge a detail are found (_suspend, wait_run, audit_once, audit_inspector_call, ...)'
);

select * from finish();
rollback;
