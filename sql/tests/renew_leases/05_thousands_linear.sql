-- renew_leases: a process holding thousands of leases renews them all, each
-- call planned afresh and never by a nested loop.  A cached generic plan
-- guessed 10 listed ids and 1 run for a new holder and joined them by a
-- nested loop: 10,000 leases took 20 s, longer than their TTL (bench
-- section 8).  Six calls and more are made so that a cached plan would
-- have been tried.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select count(tiq_test.new_run('p1', 8)) from generate_series(1, 2000);

create temp table renewals on commit drop as
with listed as (
    select
        array_agg(r.run_id) as run_ids,
        array_agg(r.epoch::bigint) as epochs
    from ticketiq.runs as r
    where r.lease_holder = 'p1'
)

select
    c.call,
    count(*) filter (where n.held) as held
from generate_series(1, 8) as c (call)
cross join listed as l
cross join lateral ticketiq.renew_leases('p1', l.run_ids, l.epochs, 8, 'run') as n
group by c.call;

select is(
    (select count(*) from renewals where held = 2000), 8::bigint,
    'each of 8 calls renews all 2000 leases'
);
select ok(
    (select p.proconfig @> array['plan_cache_mode=force_custom_plan']
     from pg_catalog.pg_proc as p
     where p.oid = 'ticketiq.renew_leases(text, uuid[], bigint[], double precision, text)'::regprocedure),
    'planned afresh on each call: the arrays'' length is known to the planner'
);
select ok(
    (select p.proconfig @> array['enable_nestloop=off']
     from pg_catalog.pg_proc as p
     where p.oid = 'ticketiq.renew_leases(text, uuid[], bigint[], double precision, text)'::regprocedure),
    'never a nested loop: the cost stays linear in the leases listed'
);

select * from finish();
rollback;
