-- finish_job: the holder at its epoch completes the job with its result;
-- the lease is released, the progress kept, job.completed audited, and
-- the job leaves jobs_open.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('fine_tune', '{"epochs": 2}', true, 'j1');
select ticketiq.claim_job('p1', 8);

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"epochs_done": 2}');
select tiq_test.advance(3);

select results_eq(
    $$select f.job_id, f.state, f.finished_at
      from ticketiq.finish_job(pg_temp.job('j1'), 1, '{"model": "ft-1", "loss": 0.25}') as f$$,
    $$values (pg_temp.job('j1'), 'completed'::text, '2030-01-01 00:00:03+00'::timestamptz)$$,
    'returns the job completed at the database clock'
);
select results_eq(
    $$select j.state, j.result, j.progress, j.holder, j.lease_expires_at, j.finished_at, j.epoch,
             j.failure_reason
      from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')$$,
    $$values ('completed'::text, '{"model": "ft-1", "loss": 0.25}'::jsonb, '{"epochs_done": 2}'::jsonb,
              null::text, null::timestamptz, '2030-01-01 00:00:03+00'::timestamptz, 1::bigint, null::text)$$,
    'completed with its result, progress kept, lease released'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.run_id, a.detail ->> 'job_id', a.detail ->> 'kind'
      from ticketiq.audit as a where a.event like 'job.%'$$,
    $$values ('job.completed'::text, 1::bigint, 'p1'::text, null::uuid, pg_temp.job('j1')::text,
              'fine_tune'::text)$$,
    'one job.completed audit row'
);
select is_empty(
    $$select 1 from ticketiq.jobs_open as jo where jo.job_id = pg_temp.job('j1')$$,
    'a completed job is not open'
);
select is(
    (select r.held from ticketiq.renew_leases('p1', array[pg_temp.job('j1')], array[1]::bigint[], 8, 'job') as r),
    false,
    'a finished job''s lease is no longer held'
);
select ticketiq.enqueue_job('source_sync', '{}', true, 'j2');
select ticketiq.claim_job('p1', 8);
select is(
    (select f.state from ticketiq.finish_job(pg_temp.job('j2'), 1, 'null') as f), 'completed',
    'a JSON null result is a result'
);

select * from finish();
rollback;
