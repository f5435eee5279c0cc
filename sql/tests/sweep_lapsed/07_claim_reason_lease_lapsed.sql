-- sweep_lapsed: a run claimed by the sweep is up for adoption because its
-- lease lapsed: claim_reason lease_lapsed, even after an earlier release.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.release_run(tiq_test.rid(2), 1);
select ticketiq.adopt_run('p2', 8, tiq_test.rid(2));
select tiq_test.advance(10);
select ticketiq.sweep_lapsed('leader');

select is(
    (select r.claim_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'lease_lapsed',
    'a lapsed run: lease_lapsed'
);
select results_eq(
    $$select r.status::text, r.claim_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('claimed'::text, 'lease_lapsed'::text)$$,
    'a released run adopted and then lost: lease_lapsed, not released'
);

select * from finish();
rollback;
