-- fail_job: the holder at its epoch fails the job with its reason; the
-- lease is released, job.failed audited, and the job is never claimed again.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{"pages": 3}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(2);

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select results_eq(
    $$select f.job_id, f.state, f.finished_at
      from ticketiq.fail_job(pg_temp.job('j1'), 1, 'VendorRejected: jira 403') as f$$,
    $$values (pg_temp.job('j1'), 'failed'::text, '2030-01-01 00:00:02+00'::timestamptz)$$,
    'returns the job failed at the database clock'
);
select results_eq(
    $$select j.state, j.failure_reason, j.result, j.holder, j.lease_expires_at, j.finished_at
      from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')$$,
    $$values ('failed'::text, 'VendorRejected: jira 403'::text, null::jsonb, null::text, null::timestamptz,
              '2030-01-01 00:00:02+00'::timestamptz)$$,
    'failed with its reason, lease released'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.detail ->> 'job_id', a.detail ->> 'reason'
      from ticketiq.audit as a where a.event like 'job.%'$$,
    $$values ('job.failed'::text, 1::bigint, 'p1'::text, pg_temp.job('j1')::text,
              'VendorRejected: jira 403'::text)$$,
    'one job.failed audit row'
);
select is_empty($$select 1 from ticketiq.claim_job('p2', 8)$$, 'a failed job is never claimed again');
select is_empty($$select 1 from ticketiq.sweep_jobs('leader')$$, 'nor swept');

select * from finish();
rollback;
