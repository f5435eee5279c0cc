-- release_run: a released run is up for adoption because it was released,
-- not lost: claim_reason released.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.release_run(tiq_test.rid(1), 1);

select results_eq(
    $$select r.status::text, r.claim_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 'released'::text)$$,
    'claimed, released'
);

select * from finish();
rollback;
