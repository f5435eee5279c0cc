-- renew_leases (kind job): held = false for each listed job the worker no longer
-- holds: swept, lapsed (never revived), finished, another holder's, at
-- another epoch or unknown.  The worker then stops it at once.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

-- j1: lapses and is swept.  j2: lapses, not swept yet.  j3: completed.
-- j4: p9's.  j5: held by p1 (the control).
select ticketiq.enqueue_job('sync_swept', '{}', true, 'j1');
select ticketiq.claim_job('p1', 8, array['sync_swept']);
select tiq_test.advance(9);
select ticketiq.sweep_jobs('leader');
select ticketiq.enqueue_job('sync_lapsed', '{}', true, 'j2');
select ticketiq.claim_job('p1', 8, array['sync_lapsed']);
select tiq_test.advance(1);
select ticketiq.enqueue_job('fine_tune', '{}', true, 'j3');
select ticketiq.claim_job('p1', 60, array['fine_tune']);
select ticketiq.finish_job(pg_temp.job('j3'), 1, '{}');
select tiq_test.advance(1);
select ticketiq.enqueue_job('red_team', '{}', false, 'j4');
select ticketiq.claim_job('p9', 60, array['red_team']);
select tiq_test.advance(1);
select ticketiq.enqueue_job('classifier_training', '{}', false, 'j5');
select ticketiq.claim_job('p1', 60, array['classifier_training']);
select tiq_test.advance(10);

create temp table renewed on commit drop as
select r.*
from ticketiq.renew_leases(
    'p1',
    array[
        pg_temp.job('j1'), pg_temp.job('j2'), pg_temp.job('j3'), pg_temp.job('j4'), pg_temp.job('j5'),
        tiq_test.rid(98)
    ],
    array[1, 1, 1, 1, 1, 1]::bigint[],
    8,
    'job'
) as r;

select set_eq(
    $$select r.lease_id, r.held from renewed as r$$,
    $$values (pg_temp.job('j1'), false), (pg_temp.job('j2'), false), (pg_temp.job('j3'), false),
             (pg_temp.job('j4'), false), (pg_temp.job('j5'), true), (tiq_test.rid(98), false)$$,
    'one row per listed job; only the job still held is held'
);
select is(
    (select r.lease_expires_at from renewed as r where r.lease_id = pg_temp.job('j2')), null::timestamptz,
    'no expiry returned for the lapsed job'
);
select is(
    (select j.lease_expires_at from ticketiq.jobs as j where j.job_id = pg_temp.job('j2')),
    '2030-01-01 00:00:17+00'::timestamptz,
    'the lapsed lease was not revived: the sweep takes the job back'
);
select is(
    (select j.lease_expires_at from ticketiq.jobs as j where j.job_id = pg_temp.job('j4')),
    '2030-01-01 00:01:11+00'::timestamptz,
    'another holder''s lease is not renewed'
);
select is(
    (
        select r.held
        from ticketiq.renew_leases('p1', array[pg_temp.job('j5')], array[2]::bigint[], 8, 'job') as r
    ),
    false,
    'the right job at the wrong epoch is not held'
);
select is(
    (select count(*) from ticketiq.sweep_jobs('leader') as s where s.job_id = pg_temp.job('j2')), 1::bigint,
    'the lapsed job is left for the sweep'
);

select * from finish();
rollback;
