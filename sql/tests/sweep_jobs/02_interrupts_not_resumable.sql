-- sweep_jobs: a running job that is not resumable (classifier training,
-- red-team run) whose lease lapsed is failed 'interrupted: ...', audited
-- job.interrupted, and never runs again: it must be started anew.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select ticketiq.enqueue_job('classifier_training', '{"epochs": 5}', false, 'j1');
select ticketiq.claim_job('p1', 8);
select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"epochs_done": 2}');
select tiq_test.advance(8);

select results_eq(
    $$select s.job_id, s.epoch, s.attempts, s.state, s.lapsed_holder from ticketiq.sweep_jobs('leader-a') as s$$,
    $$values (pg_temp.job('j1'), 2::bigint, 1, 'failed'::text, 'p1'::text)$$,
    'the lapsed job is failed at epoch 2'
);
select results_eq(
    $$select j.state, j.holder, j.lease_expires_at, j.finished_at, j.result, j.progress
      from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')$$,
    $$values ('failed'::text, null::text, null::timestamptz, '2030-01-01 00:00:08+00'::timestamptz, null::jsonb,
              '{"epochs_done": 2}'::jsonb)$$,
    'failed and finished, lease cleared, its progress left for the record'
);
select matches(
    (select j.failure_reason from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')),
    '^interrupted: .*lease lapsed at .* held by p1$',
    'the reason says interrupted, when and whose lease lapsed'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.detail ->> 'job_id', a.detail ->> 'kind', a.detail ->> 'reason'
      from ticketiq.audit as a where a.event in ('job.requeued', 'job.interrupted')$$,
    $$select 'job.interrupted'::text, 2::bigint, 'leader-a'::text, j.job_id::text, j.kind, j.failure_reason
      from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')$$,
    'one job.interrupted audit row with the reason'
);
select is_empty($$select 1 from ticketiq.claim_job('p2', 8)$$, 'it is not claimed again');
select is_empty(
    $$select 1 from ticketiq.jobs_open as jo where jo.job_id = pg_temp.job('j1')$$,
    'and is not open'
);

select * from finish();
rollback;
