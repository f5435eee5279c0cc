-- write_checkpoint: a step changes only the run's last_step: updated_at (an
-- indexed column, runs_claimed_idx) is left alone, as are the epoch, the
-- lease and the status, so the runs update can be a HOT update (migration
-- 0005 leaves room for it: fillfactor 80).  A replay changes nothing either.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));

create temp table before_steps on commit drop as
select r.* from ticketiq.runs as r where r.run_id = tiq_test.rid(1);
create temp table stats_before on commit drop as
select
    s.n_tup_upd,
    s.n_tup_hot_upd
from pg_catalog.pg_stat_xact_user_tables as s
where s.relid = 'ticketiq.runs'::regclass;

select tiq_test.advance(1);
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'))
);
select tiq_test.advance(2);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2);

create temp table stats_after on commit drop as
select
    s.n_tup_upd,
    s.n_tup_hot_upd
from pg_catalog.pg_stat_xact_user_tables as s
where s.relid = 'ticketiq.runs'::regclass;

select is(
    (select r.updated_at from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    '2030-01-01 00:00:00+00'::timestamptz,
    'updated_at is still the start_run time after two steps'
);
select results_eq(
    $$select r.last_step::integer, r.epoch::bigint, r.status::text, r.lease_holder, r.lease_expires_at, r.updated_at
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$select 2, b.epoch::bigint, b.status::text, b.lease_holder, b.lease_expires_at,
        b.updated_at from before_steps as b$$,
    'only last_step moved'
);
select is(
    (
        select to_jsonb(r) - 'last_step' from ticketiq.runs as r where r.run_id = tiq_test.rid(1)
    ),
    (select to_jsonb(b) - 'last_step' from before_steps as b),
    'no other column of the run changed'
);
select is(
    (select a.n_tup_upd - b.n_tup_upd from stats_after as a, stats_before as b), 2::bigint,
    'one update of runs per step'
);
select is(
    (select a.n_tup_hot_upd - b.n_tup_hot_upd from stats_after as a, stats_before as b), 2::bigint,
    'both were HOT updates (no indexed column changed)'
);

select tiq_test.advance(1);
select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 2, tiq_test.body(), 'seal-2', 'k1');
select is(
    (select r.updated_at from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    '2030-01-01 00:00:00+00'::timestamptz,
    'a replay leaves updated_at alone too'
);

select * from finish();
rollback;
