-- finish_job: a second finish (TQ006) and a null result (TQ004) are
-- refused and change nothing; the first result stays.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j2');

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select ticketiq.claim_job('p1', 60);
select ticketiq.claim_job('p1', 60);
select ticketiq.finish_job(pg_temp.job('j1'), 1, '{"pages": 1}');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.finish_job(pg_temp.job('j1'), 1, '{"pages": 2}')$$, 'TQ006', null,
    'finished already: not running'
);
select throws_ok(
    $$select ticketiq.finish_job(pg_temp.job('j2'), 1, null)$$, 'TQ004', null, 'a null result'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the refused finishes changed nothing'
);
select is(
    (select j.result from ticketiq.jobs as j where j.job_id = pg_temp.job('j1')),
    '{"pages": 1}'::jsonb,
    'the first result stays'
);

select * from finish();
rollback;
