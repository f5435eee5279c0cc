-- finish_job: a second finish (TQ006), a stale epoch (TQ002), a lapsed
-- lease (TQ003), an unknown job (TQ010) and a null result (TQ004) are
-- refused and change nothing: a stalled worker cannot complete a job
-- another worker runs.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select tiq_test.advance(1);
select ticketiq.enqueue_job('source_sync', '{}', true, 'j2');

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select ticketiq.claim_job('p1', 60);
select ticketiq.claim_job('p1', 8);
select ticketiq.finish_job(pg_temp.job('j1'), 1, '{"pages": 1}');
select tiq_test.advance(8);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.finish_job(pg_temp.job('j1'), 1, '{"pages": 2}')$$, 'TQ006', null,
    'finished already: not running'
);
select throws_ok(
    $$select ticketiq.finish_job(pg_temp.job('j2'), 1, '{}')$$, 'TQ003', null,
    'the lease lapsed by the database clock'
);
select throws_ok(
    $$select ticketiq.finish_job(tiq_test.rid(99), 1, '{}')$$, 'TQ010', null, 'an unknown job'
);
select throws_ok(
    $$select ticketiq.finish_job(pg_temp.job('j1'), 1, null)$$, 'TQ004', null, 'a null result'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the rejected finishes changed nothing'
);

select ticketiq.sweep_jobs('leader');
select ticketiq.claim_job('p2', 8);
select throws_ok(
    $$select ticketiq.finish_job(pg_temp.job('j2'), 1, '{}')$$, 'TQ002', null,
    'swept and claimed again: the stalled worker''s epoch is stale'
);
select is(
    (select j.holder from ticketiq.jobs as j where j.job_id = pg_temp.job('j2')), 'p2',
    'the job stays with its new holder'
);

select * from finish();
rollback;
