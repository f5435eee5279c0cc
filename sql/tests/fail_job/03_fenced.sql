-- fail_job: fenced like every write of an attempt: unknown job (TQ010),
-- stale epoch (TQ002), not running (TQ006), lapsed lease (TQ003).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('red_team', '{}', false, 'j1');
select tiq_test.advance(1);
select ticketiq.enqueue_job('red_team', '{}', false, 'j2');
select tiq_test.advance(1);
select ticketiq.enqueue_job('red_team', '{}', false, 'j3');

create function pg_temp.job(p_key text) returns uuid
language sql stable
as $$
    select j.job_id from ticketiq.jobs as j where j.idempotency_key = p_key;
$$;

select ticketiq.claim_job('p1', 8);
select ticketiq.claim_job('p1', 60);
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.fail_job(tiq_test.rid(99), 1, 'boom')$$, 'TQ010', null, 'an unknown job'
);
select throws_ok(
    $$select ticketiq.fail_job(pg_temp.job('j2'), 2, 'boom')$$, 'TQ002', null, 'a stale epoch'
);
select throws_ok(
    $$select ticketiq.fail_job(pg_temp.job('j3'), 0, 'boom')$$, 'TQ006', null, 'a queued job'
);
select throws_ok(
    $$select ticketiq.fail_job(pg_temp.job('j1'), 1, 'boom')$$, 'TQ003', null, 'the lease lapsed'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the rejected failures changed nothing'
);

select * from finish();
rollback;
