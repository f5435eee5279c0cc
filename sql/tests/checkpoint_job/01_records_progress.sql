-- checkpoint_job: the holder at its epoch replaces the job's progress; the
-- lease is not extended (renewal does that).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{"pages": 10}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(3);

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select results_eq(
    $$select c.job_id, c.epoch, c.checkpointed_at, c.lease_expires_at
      from ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"pages_done": 1}') as c$$,
    $$values (pg_temp.job('j1'), 1::bigint, '2030-01-01 00:00:03+00'::timestamptz,
              '2030-01-01 00:00:08+00'::timestamptz)$$,
    'returns the time recorded and the unchanged lease expiry'
);
select tiq_test.advance(1);
select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"pages_done": 2, "cursor": "abc"}');

select results_eq(
    $$select j.progress, j.updated_at, j.lease_expires_at, j.state, j.epoch
      from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')$$,
    $$values ('{"pages_done": 2, "cursor": "abc"}'::jsonb, '2030-01-01 00:00:04+00'::timestamptz,
              '2030-01-01 00:00:08+00'::timestamptz, 'running'::text, 1::bigint)$$,
    'the last progress replaces the one before; still running at epoch 1, lease unchanged'
);
select is(
    (select jo.progress from ticketiq.jobs_open as jo where jo.job_id = pg_temp.job('j1')),
    '{"pages_done": 2, "cursor": "abc"}'::jsonb,
    'jobs_open shows the progress'
);
select lives_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{}')$$,
    'an empty object is progress too'
);

select * from finish();
rollback;
