-- enqueue_job: a repeated idempotency key returns the existing job
-- (created = false) with its current state, and changes nothing.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

create temp table first_enqueue on commit drop as
select e.* from ticketiq.enqueue_job('fine_tune', '{"epochs": 3}', true, 'tune-42') as e;

select tiq_test.advance(2);
select tiq_test.save_fingerprint();

create temp table second_enqueue on commit drop as
select e.* from ticketiq.enqueue_job('fine_tune', '{"epochs": 9}', true, 'tune-42') as e;

select is((select s.job_id from second_enqueue as s), (select f.job_id from first_enqueue as f),
    'the repeat returns the existing job id');
select results_eq(
    $$select s.created, s.kind, s.state, s.created_at from second_enqueue as s$$,
    $$values (false, 'fine_tune'::text, 'queued'::text, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'created is false; kind, state and creation time are the existing job''s'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the repeat changed nothing (the first payload is kept)'
);

select ticketiq.claim_job('p1', 8);
select ticketiq.finish_job(f.job_id, 1, '{"loss": 0.1}') from first_enqueue as f;

select results_eq(
    $$select e.job_id, e.created, e.state
      from ticketiq.enqueue_job('fine_tune', '{"epochs": 3}', true, 'tune-42') as e$$,
    $$select f.job_id, false, 'completed'::text from first_enqueue as f$$,
    'after the job completed, the key still finds it, completed: it is not run again'
);
select is(
    (select e.job_id from ticketiq.enqueue_job('red_team', '{}', false, 'tune-42') as e),
    (select f.job_id from first_enqueue as f),
    'the key finds the job whatever kind the repeat names'
);
select is(
    (select count(*) from ticketiq.jobs as j where j.idempotency_key = 'tune-42'), 1::bigint,
    'still one job for the key'
);

select * from finish();
rollback;
