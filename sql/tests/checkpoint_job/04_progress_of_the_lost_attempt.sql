-- checkpoint_job: the progress a lost attempt recorded in time stays; the
-- worker that claims the job again records at its own epoch.  A completed
-- or a queued job takes no progress (TQ006).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{"pages": 10}', true, 'j1');
select tiq_test.advance(1);
select ticketiq.enqueue_job('source_sync', '{"pages": 10}', true, 'j2');
select tiq_test.advance(1);
select ticketiq.enqueue_job('source_sync', '{"pages": 10}', true, 'j3');

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select ticketiq.claim_job('p1', 8);
select ticketiq.claim_job('p1', 60);
select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"pages_done": 3}');
select ticketiq.finish_job(pg_temp.job('j2'), 1, '{"pages": 10}');
select tiq_test.advance(9);
select ticketiq.sweep_jobs('leader');
select ticketiq.claim_job('p2', 8, array['source_sync']);

select is(
    (select j.progress from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')),
    '{"pages_done": 3}'::jsonb,
    'the progress is the last one the lost attempt recorded in time'
);
select lives_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 3, '{"pages_done": 4}')$$,
    'the new holder records at its epoch'
);
select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j2'), 1, '{"pages_done": 10}')$$, 'TQ006', null,
    'a completed job: not running'
);
select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j3'), 0, '{"pages_done": 1}')$$, 'TQ006', null,
    'a queued job: not running'
);

select * from finish();
rollback;
