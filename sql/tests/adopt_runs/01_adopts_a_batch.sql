-- adopt_runs: up to the limit of claimed runs are adopted in one statement,
-- the oldest first, each as adopt_run adopts one (epoch + 1, lease to the
-- holder, audited); the next call takes the rest, then nothing is left.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
-- leases of 1, 3 and 5 s: each lapses, and is claimed, after the one before
select tiq_test.new_run('p1', 1, tiq_test.rid(1));
select tiq_test.new_run('p1', 3, tiq_test.rid(2));
select tiq_test.new_run('p1', 5, tiq_test.rid(3));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(2));
select tiq_test.lose(tiq_test.rid(3));

create temp table first_batch on commit drop as
select a.* from ticketiq.adopt_runs('p2', 8, 2) as a;

select is((select count(*) from first_batch), 2::bigint, 'two runs adopted: the limit');
select bag_eq(
    $$select run_id from first_batch$$,
    $$values (tiq_test.rid(1)), (tiq_test.rid(2))$$,
    'the two claimed first'
);
select is(
    (select array_agg(distinct a.epoch) from first_batch as a), array[3::bigint],
    'each at epoch 3: one above its claim'
);
select is(
    (select a.checkpoint_body is not null from first_batch as a where a.run_id = tiq_test.rid(1)),
    true, 'with its last checkpoint, as adopt_run returns it'
);
select results_eq(
    $$select r.status::text, r.lease_holder, r.lease_expires_at from ticketiq.runs as r
      where r.run_id in (tiq_test.rid(1), tiq_test.rid(2)) order by r.run_id$$,
    $$values ('running'::text, 'p2'::text, '2030-01-01 00:00:14+00'::timestamptz),
             ('running'::text, 'p2'::text, '2030-01-01 00:00:14+00'::timestamptz)$$,
    'both running again, held by p2 for the TTL'
);
select is(
    (select count(*) from ticketiq.audit as a
     where a.event = 'agent.run.adopted' and a.actor = 'p2'),
    2::bigint, 'each adoption audited'
);
select is(
    (select array_agg(a.run_id) from ticketiq.adopt_runs('p3', 8, 10) as a),
    array[tiq_test.rid(3)], 'the next call takes the one left'
);
select is(
    (select count(*) from ticketiq.adopt_runs('p3', 8, 10)), 0::bigint,
    'then nothing is left to adopt'
);

select * from finish();
rollback;
