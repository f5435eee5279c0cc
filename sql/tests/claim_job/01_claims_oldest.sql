-- claim_job: the oldest queued job is claimed, its epoch raised by one and
-- its lease given to the holder for TTL seconds; each job once; nothing
-- left: no row.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{"pages": 2}', true, 'j1');
select tiq_test.advance(1);
select ticketiq.enqueue_job('red_team', '{"probes": 4}', false, 'j2');
select tiq_test.advance(1);

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

create temp table first_claim on commit drop as
select c.* from ticketiq.claim_job('p1', 8) as c;

select results_eq(
    $$select c.job_id, c.kind, c.resumable, c.payload, c.progress, c.epoch, c.attempts, c.lease_expires_at
      from first_claim as c$$,
    $$values (pg_temp.job('j1'), 'source_sync'::text, true, '{"pages": 2}'::jsonb, '{}'::jsonb, 1::bigint, 0,
              '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the oldest job is claimed at epoch 1 with its payload and empty progress, lease to now + TTL'
);
select results_eq(
    $$select j.state, j.holder, j.epoch, j.lease_expires_at, j.updated_at
      from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')$$,
    $$values ('running'::text, 'p1'::text, 1::bigint, '2030-01-01 00:00:10+00'::timestamptz,
              '2030-01-01 00:00:02+00'::timestamptz)$$,
    'the job is running, held by p1'
);
select results_eq(
    $$select c.job_id, c.kind, c.resumable, c.epoch from ticketiq.claim_job('p2', 30) as c$$,
    $$values (pg_temp.job('j2'), 'red_team'::text, false, 1::bigint)$$,
    'the next claim takes the next job'
);
select is_empty(
    $$select 1 from ticketiq.claim_job('p3', 8)$$,
    'nothing queued: no row'
);
select is(
    (select j.holder from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')), 'p1',
    'a claim never takes a running job'
);
select set_eq(
    $$select jo.job_id, jo.state, jo.holder from ticketiq.jobs_open as jo$$,
    $$values (pg_temp.job('j1'), 'running'::text, 'p1'::text), (pg_temp.job('j2'), 'running'::text, 'p2'::text)$$,
    'jobs_open shows both running jobs with their holders'
);

select * from finish();
rollback;
