-- claim_job: with kinds, only a queued job of one of those kinds is
-- claimed; older jobs of other kinds stay queued for the workers that run them.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('classifier_training', '{}', false, 'j1');
select tiq_test.advance(1);
select ticketiq.enqueue_job('source_sync', '{}', true, 'j2');
select tiq_test.advance(1);

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select is_empty(
    $$select 1 from ticketiq.claim_job('p1', 8, array['fine_tune'])$$,
    'no queued job of the kinds: no row'
);
select is(
    (select c.job_id from ticketiq.claim_job('p1', 8, array['fine_tune', 'source_sync']) as c),
    pg_temp.job('j2'),
    'the job of a listed kind is claimed although an older one of another kind waits'
);
select is(
    (select j.state from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')), 'queued',
    'the older job of another kind stays queued'
);
select is(
    (select c.job_id from ticketiq.claim_job('p2', 8) as c), pg_temp.job('j1'),
    'kinds null: any kind'
);

select * from finish();
rollback;
