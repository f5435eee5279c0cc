-- get_job: a job's state, progress, result, lease and attempts lost, as
-- it stands at each stage.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select ticketiq.enqueue_job('source_sync', '{"pages": 2}', true, 'sync-1');
select results_eq(
    $$select g.job_id, g.kind, g.resumable, g.state, g.payload, g.progress, g.result, g.epoch, g.holder,
             g.lease_expires_at, g.attempts, g.idempotency_key, g.failure_reason, g.created_at, g.updated_at,
             g.finished_at
      from ticketiq.get_job(pg_temp.job('sync-1')) as g$$,
    $$values (pg_temp.job('sync-1'), 'source_sync'::text, true, 'queued'::text, '{"pages": 2}'::jsonb,
              '{}'::jsonb, null::jsonb, 0::bigint, null::text, null::timestamptz, 0, 'sync-1'::text, null::text,
              '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:00+00'::timestamptz, null::timestamptz)$$,
    'a queued job'
);

select ticketiq.claim_job('p1', 8);
select ticketiq.checkpoint_job(pg_temp.job('sync-1'), 1, '{"pages_done": 1}');
select results_eq(
    $$select g.state, g.progress, g.epoch, g.holder, g.lease_expires_at
      from ticketiq.get_job(pg_temp.job('sync-1')) as g$$,
    $$values ('running'::text, '{"pages_done": 1}'::jsonb, 1::bigint, 'p1'::text,
              '2030-01-01 00:00:08+00'::timestamptz)$$,
    'a running job with its holder, lease and progress'
);

select tiq_test.advance(1);
select ticketiq.finish_job(pg_temp.job('sync-1'), 1, '{"pages": 2}');
select results_eq(
    $$select g.state, g.result, g.holder, g.finished_at from ticketiq.get_job(pg_temp.job('sync-1')) as g$$,
    $$values ('completed'::text, '{"pages": 2}'::jsonb, null::text, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'a completed job with its result'
);

select * from finish();
rollback;
