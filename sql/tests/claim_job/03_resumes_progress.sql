-- claim_job: a resumable job queued again by the sweep is claimed with the
-- progress its lost attempt checkpointed, the attempts lost so far and a
-- new epoch.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{"pages": 10}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select ticketiq.checkpoint_job(j.job_id, 1, '{"pages_done": 4}')
from ticketiq.jobs as j where j.idempotency_key = 'j1';
select tiq_test.advance(9);
select ticketiq.sweep_jobs('leader');

select results_eq(
    $$select c.progress, c.epoch, c.attempts, c.lease_expires_at from ticketiq.claim_job('p2', 8) as c$$,
    $$values ('{"pages_done": 4}'::jsonb, 3::bigint, 1, '2030-01-01 00:00:17+00'::timestamptz)$$,
    'claimed again from its checkpointed progress at epoch 3, one attempt lost'
);
select is(
    (select j.holder from ticketiq.jobs as j where j.idempotency_key = 'j1'), 'p2',
    'the new holder runs it'
);

select * from finish();
rollback;
