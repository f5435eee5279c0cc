-- renew_leases: held = false for each listed run the process no longer
-- holds: taken over, lapsed (never revived), finished, another holder's, or
-- at another epoch (I12).
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
-- run 1: lapses and is taken over by p2.  run 2: lapses, not swept yet.
-- run 3: failed.  run 4: p9's.  run 5: held by p1 (the control).
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.new_run('p1', 60, tiq_test.rid(3));
select ticketiq.fail_run(tiq_test.rid(3), 1, 'owner no longer allowed');
select tiq_test.new_run('p9', 60, tiq_test.rid(4));
select tiq_test.new_run('p1', 60, tiq_test.rid(5));
select tiq_test.advance(10);

create temp table renewed on commit drop as
select r.*
from ticketiq.renew_leases(
    'p1',
    array[tiq_test.rid(1), tiq_test.rid(2), tiq_test.rid(3), tiq_test.rid(4), tiq_test.rid(5), tiq_test.rid(98)],
    array[1, 1, 1, 1, 1, 1]::bigint[],
    8,
    'run'
) as r;

select results_eq(
    $$select r.lease_id, r.held from renewed as r order by r.lease_id$$,
    $$values (tiq_test.rid(1), false), (tiq_test.rid(2), false), (tiq_test.rid(3), false),
             (tiq_test.rid(4), false), (tiq_test.rid(5), true), (tiq_test.rid(98), false)$$,
    'one row per listed run; only the run still held is held'
);
select is(
    (select r.lease_expires_at from renewed as r where r.lease_id = tiq_test.rid(2)), null::timestamptz,
    'no expiry returned for the lapsed run'
);
select is(
    (select r.lease_expires_at from ticketiq.runs as r where r.run_id = tiq_test.rid(2)),
    '2030-01-01 00:00:17+00'::timestamptz,
    'the lapsed lease was not revived: the sweep claims it'
);
select is(
    (select r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'p2',
    'the taken-over run stays with p2'
);
select is(
    (select r.lease_expires_at from ticketiq.runs as r where r.run_id = tiq_test.rid(4)),
    '2030-01-01 00:01:09+00'::timestamptz,
    'another holder''s lease is not renewed'
);
select is(
    (
        select r.held from ticketiq.renew_leases('p1', array[tiq_test.rid(5)], array[2]::bigint[], 8, 'run') as r
    ),
    false,
    'the right run at the wrong epoch is not held'
);
select is(
    (select count(*) from ticketiq.sweep_lapsed('leader') as s where s.run_id = tiq_test.rid(2)), 1::bigint,
    'the lapsed run is left for the sweep'
);

select * from finish();
rollback;
