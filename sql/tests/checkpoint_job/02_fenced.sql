-- checkpoint_job: a worker that stalled past its lease can record nothing
-- more: lapsed (TQ003), swept (TQ002), claimed again by another worker
-- (TQ002); nor can anyone write to a finished or queued job (TQ006) or an
-- unknown one (TQ010).  Each rejection changes nothing.
begin;
select plan(9);

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
-- j1's lease (to 00:00:10) lapses; not swept yet.
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"pages_done": 4}')$$, 'TQ003', null,
    'lapsed by the database clock, before any sweep'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the lapsed writer changed nothing'
);

select ticketiq.sweep_jobs('leader');
select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"pages_done": 4}')$$, 'TQ002', null,
    'swept: the stalled worker''s epoch is stale'
);
select ticketiq.claim_job('p2', 8, array['source_sync']);
select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '{"pages_done": 4}')$$, 'TQ002', null,
    'claimed again by p2: still stale'
);
select is(
    (select j.progress from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')), '{"pages_done": 3}'::jsonb,
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
select throws_ok(
    $$select ticketiq.checkpoint_job(tiq_test.rid(99), 1, '{"pages_done": 1}')$$, 'TQ010', null,
    'an unknown job'
);

select * from finish();
rollback;
