-- enqueue_job: a new job is queued at epoch 0 with empty progress, no
-- holder, no lease and no attempts lost, for any job worker to claim.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

create temp table enqueued on commit drop as
select e.* from ticketiq.enqueue_job('source_sync', '{"source": "confluence", "pages": 3}', true) as e;

select results_eq(
    $$select e.created, e.kind, e.state, e.created_at from enqueued as e$$,
    $$values (true, 'source_sync'::text, 'queued'::text, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'created, queued, at the database clock'
);
select results_eq(
    $$select j.kind, j.resumable, j.payload, j.state, j.progress, j.result, j.epoch, j.holder,
             j.lease_expires_at, j.attempts, j.idempotency_key, j.failure_reason, j.finished_at
      from ticketiq.jobs as j inner join enqueued as e on j.job_id = e.job_id$$,
    $$values ('source_sync'::text, true, '{"source": "confluence", "pages": 3}'::jsonb, 'queued'::text,
              '{}'::jsonb, null::jsonb, 0::bigint, null::text, null::timestamptz, 0, null::text, null::text,
              null::timestamptz)$$,
    'the row: queued at epoch 0, empty progress, no holder, lease, key or result'
);
select is(
    (select jo.state from ticketiq.jobs_open as jo inner join enqueued as e on jo.job_id = e.job_id),
    'queued',
    'jobs_open shows the queued job'
);
select isnt(
    (select e.job_id from ticketiq.enqueue_job('source_sync', '{"source": "confluence", "pages": 3}', true) as e),
    (select e.job_id from enqueued as e),
    'without a key, the same payload again is a second job'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event like 'job.%'), 0::bigint,
    'queueing is not audited'
);

select * from finish();
rollback;
