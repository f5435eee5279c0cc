-- adopt_run: a TTL so short that the new lease has lapsed before the
-- adoption's own resume row is written (under a microsecond: no time at
-- all) raises TQ003, and nothing is adopted: the run stays claimed for a
-- worker with a real TTL.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.advance(9);
select ticketiq.sweep_lapsed('leader');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.adopt_run('p2', 1e-9, tiq_test.rid(1))$$, 'TQ003', null,
    'a lease of no time lapses within the statement'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing adopted');
select is(
    (select a.run_id from ticketiq.adopt_run('p2', 30, tiq_test.rid(1)) as a), tiq_test.rid(1),
    'a real TTL adopts it'
);

select * from finish();
rollback;
