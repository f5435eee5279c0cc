-- schema: every table that holds an owner's data is keyed by its owner
-- (issue 46, findings 1 and 13's entries).  Every unique index of schema
-- ticketiq over a text column (a key a caller may choose) includes the
-- owner, or the run the row belongs to (a run is its owner's, its id drawn
-- by the database); the exceptions are listed below, each with why.  A
-- table keyed by a caller's text without its owner would let one owner's
-- key find, or be refused by, another owner's row.
begin;
select plan(2);

create temporary table not_an_owners as
select *
from (values
    -- api keys: key_id is drawn by create_api_key, not chosen by a caller
    ('api_keys_pkey'),
    -- the app's schedules, named by the app's code and configuration (owner is a field of it)
    ('cron_schedules_pkey'),
    -- background jobs are the app's, not an owner's; their keys the app's code draws
    ('jobs_idempotency_key_key'),
    -- the sweep leader's lease, by name; app processes, by their id
    ('leader_leases_pkey'),
    ('processes_pkey'),
    -- keys the library draws: entry:<entry id> for an entry's run, a delegation's key
    -- for a child run (ticketiq.start_run); no owner's sender chooses one
    ('runs_idempotency_key_key'),
    -- a vendor's limits are the app's (named by its code or an operator), and its buckets'
    -- scope is the owner itself where the limit is per owner
    ('vendor_limits_pkey'),
    -- the app's workflow versions, named by its code (name, version)
    ('workflow_versions_pkey'),
    ('vendor_buckets_pkey')
) as v (index_name);

create temporary table text_keys as
select
    c.relname::text as index_name,
    t.relname::text as table_name,
    array_agg(a.attname::text order by k.ord) as columns
from pg_catalog.pg_index as i
inner join pg_catalog.pg_class as c on i.indexrelid = c.oid
inner join pg_catalog.pg_class as t on i.indrelid = t.oid
inner join pg_catalog.pg_namespace as n on c.relnamespace = n.oid
cross join lateral unnest(i.indkey::integer[]) with ordinality as k (attnum, ord)
inner join pg_catalog.pg_attribute as a on i.indrelid = a.attrelid and k.attnum = a.attnum
where n.nspname = 'ticketiq' and i.indisunique
group by c.relname, t.relname
having bool_or(
    (select coalesce(nullif(ty.typbasetype, 0), ty.oid) from pg_catalog.pg_type as ty where ty.oid = a.atttypid)
    = 'text'::regtype
);

select is_empty(
    $$select k.index_name, k.columns from text_keys as k
      where not ('owner' = any(k.columns) or 'run_id' = any(k.columns))
          and k.index_name not in (select o.index_name from not_an_owners as o)$$,
    'every unique key over text holds the owner or the run (or is listed, with why)'
);
select results_eq(
    $$select k.index_name collate "C" from text_keys as k where 'owner' = any(k.columns) order by 1$$,
    $$values ('entries_kind_owner_sender_id_key'::text collate "C"), ('trace_contexts_pkey')$$,
    'the keys by owner: entries and their trace contexts'
);

select * from finish();
rollback;
