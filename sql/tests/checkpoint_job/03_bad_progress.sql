-- checkpoint_job: progress that is not a JSON object raises TQ004 and
-- changes nothing.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('fine_tune', '{"epochs": 3}', true, 'j1');
select ticketiq.claim_job('p1', 8);
select tiq_test.save_fingerprint();

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, null)$$, 'TQ004', null, 'null progress'
);
select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '[1]')$$, 'TQ004', null, 'an array'
);
select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, '3')$$, 'TQ004', null, 'a number'
);
select throws_ok(
    $$select ticketiq.checkpoint_job(pg_temp.job('j1'), 1, 'null')$$, 'TQ004', null, 'JSON null'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the rejected checkpoints changed nothing'
);

select * from finish();
rollback;
