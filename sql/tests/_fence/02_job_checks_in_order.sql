-- _fence (kind job): locks the job for a fenced write and raises, in this order,
-- TQ010 unknown job, TQ002 stale epoch, TQ006 not running, TQ003 lapsed;
-- otherwise returns the job.
begin;
select plan(10);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select tiq_test.advance(1);
select ticketiq.enqueue_job('source_sync', '{}', true, 'j2');
select tiq_test.advance(1);
select ticketiq.enqueue_job('source_sync', '{}', true, 'j3');
select ticketiq.claim_job('p1', 8);
select ticketiq.claim_job('p1', 8);
select ticketiq.finish_job(j.job_id, 1, '{}')
from ticketiq.jobs as j where j.idempotency_key = 'j2';

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select is(
    ((ticketiq._fence('job', pg_temp.job('j1'), 1, ticketiq.now())).job).holder, 'p1',
    'the holder at the current epoch passes and gets the job'
);
select throws_ok(
    $$select ticketiq._fence('job', tiq_test.rid(99), 1, ticketiq.now())$$, 'TQ010', null, 'unknown job'
);
select throws_ok(
    $$select ticketiq._fence('job', pg_temp.job('j1'), 2, ticketiq.now())$$, 'TQ002', null,
    'a later epoch is stale too'
);
select throws_ok(
    $$select ticketiq._fence('job', pg_temp.job('j1'), null, ticketiq.now())$$, 'TQ002', null, 'a null epoch'
);
select throws_ok(
    $$select ticketiq._fence('job', pg_temp.job('j2'), 1, ticketiq.now())$$, 'TQ006', null,
    'a completed job at its epoch: not running'
);
select throws_ok(
    $$select ticketiq._fence('job', pg_temp.job('j3'), 0, ticketiq.now())$$, 'TQ006', null,
    'a queued job at epoch 0: not running'
);
select lives_ok(
    $$select ticketiq._fence('job', pg_temp.job('j1'), 1, '2030-01-01 00:00:09.999999+00')$$,
    'a microsecond before expiry: held'
);
select throws_ok(
    $$select ticketiq._fence('job', pg_temp.job('j1'), 1, '2030-01-01 00:00:10+00')$$, 'TQ003', null,
    'at the expiry instant: lapsed'
);
select throws_ok(
    $$select ticketiq._fence('job', pg_temp.job('j1'), 0, '2030-01-01 00:01:00+00')$$, 'TQ002', null,
    'stale epoch is reported before a lapse'
);
select is(
    (select j.state from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')), 'running',
    'the checks change nothing'
);

select * from finish();
rollback;
