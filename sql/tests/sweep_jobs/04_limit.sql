-- sweep_jobs: at most p_limit jobs per call, the longest lapsed first.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.enqueue_job('source_sync', '{}', true, 'j1');
select ticketiq.claim_job('p1', 9);
select ticketiq.enqueue_job('source_sync', '{}', true, 'j2');
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(10);

select results_eq(
    $$select s.lapsed_at from ticketiq.sweep_jobs('leader', 1) as s$$,
    $$values ('2030-01-01 00:00:08+00'::timestamptz)$$,
    'limit 1: the job whose lease lapsed first'
);
select results_eq(
    $$select s.lapsed_at from ticketiq.sweep_jobs('leader', 1) as s$$,
    $$values ('2030-01-01 00:00:09+00'::timestamptz)$$,
    'the next call takes the other'
);
select is_empty($$select 1 from ticketiq.sweep_jobs('leader', 1)$$, 'then nothing');

select * from finish();
rollback;
