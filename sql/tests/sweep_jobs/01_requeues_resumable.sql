-- sweep_jobs: a running resumable job whose lease lapsed by the database
-- clock is queued again with its progress kept: epoch + 1, attempts + 1,
-- lease cleared, job.requeued audited.  Fresh, queued and finished jobs are
-- untouched.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

-- j1: lapses.  j2: fresh lease.  j3: completed.  j4: queued.
select ticketiq.enqueue_job('source_sync', '{"pages": 10}', true, 'j1');
select ticketiq.claim_job('p1', 8, array['source_sync']);
select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"pages_done": 6}');
select ticketiq.enqueue_job('fine_tune', '{}', true, 'j2');
select ticketiq.claim_job('p1', 60, array['fine_tune']);
select ticketiq.enqueue_job('red_team', '{}', false, 'j3');
select ticketiq.claim_job('p1', 8, array['red_team']);
select ticketiq.finish_job(pg_temp.job('j3'), 1, '{}');
select ticketiq.enqueue_job('classifier_training', '{}', false, 'j4');
select tiq_test.advance(10);

create temp table untouched_before on commit drop as
select j.* from ticketiq.jobs as j where j.job_id <> pg_temp.job('j1');

create temp table swept on commit drop as
select s.* from ticketiq.sweep_jobs('leader-a') as s;

select results_eq(
    $$select s.job_id, s.kind, s.epoch, s.attempts, s.state, s.lapsed_holder, s.lapsed_at from swept as s$$,
    $$values (pg_temp.job('j1'), 'source_sync'::text, 2::bigint, 1, 'queued'::text, 'p1'::text,
              '2030-01-01 00:00:08+00'::timestamptz)$$,
    'returns only the lapsed job, queued again at epoch 2 with one attempt lost'
);
select results_eq(
    $$select j.state, j.epoch, j.attempts, j.progress, j.holder, j.lease_expires_at, j.finished_at,
             j.failure_reason, j.updated_at
      from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')$$,
    $$values ('queued'::text, 2::bigint, 1, '{"pages_done": 6}'::jsonb, null::text, null::timestamptz,
              null::timestamptz, null::text, '2030-01-01 00:00:10+00'::timestamptz)$$,
    'queued at epoch 2 with its progress kept, lease cleared, not finished'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.run_id, a.detail ->> 'job_id', a.detail ->> 'kind',
             a.detail ->> 'lapsed_holder', (a.detail ->> 'lapsed_at')::timestamptz,
             (a.detail ->> 'attempts')::integer, a.detail -> 'progress'
      from ticketiq.audit as a where a.event in ('job.requeued', 'job.interrupted')$$,
    $$values ('job.requeued'::text, 2::bigint, 'leader-a'::text, null::uuid, pg_temp.job('j1')::text,
              'source_sync'::text, 'p1'::text, '2030-01-01 00:00:08+00'::timestamptz, 1,
              '{"pages_done": 6}'::jsonb)$$,
    'one job.requeued audit row by the sweeper'
);
select set_eq(
    $$select j::text from ticketiq.jobs as j where j.job_id <> pg_temp.job('j1')$$,
    $$select j::text from untouched_before as j$$,
    'the fresh, completed and queued jobs are untouched'
);
select is(
    (select jo.state from ticketiq.jobs_open as jo where jo.job_id = pg_temp.job('j1')), 'queued',
    'jobs_open shows the job queued again'
);
select is(
    (select c.job_id from ticketiq.claim_job('p2', 8, array['source_sync']) as c), pg_temp.job('j1'),
    'any worker can claim it again'
);
select is_empty($$select 1 from ticketiq.sweep_jobs('leader-a')$$, 'nothing else to sweep');

select * from finish();
rollback;
