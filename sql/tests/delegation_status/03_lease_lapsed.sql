-- delegation_status: lease_lapsed tells by the database clock (the fake
-- clock here) whether a running child's lease expired, so the parent takes
-- it over; a claimed child is not "lapsed" (a sweep already claimed it),
-- and an adopted child is alive again.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));

select tiq_test.advance(7);
select is(
    (select d.lease_lapsed from ticketiq.delegation_status('deleg-1') as d), false,
    'one second before its expiry: not lapsed'
);
select tiq_test.advance(1);
select is(
    (select d.lease_lapsed from ticketiq.delegation_status('deleg-1') as d), true,
    'at its expiry: lapsed'
);
select tiq_test.advance(60);
select is(
    (select (d.status, d.lease_lapsed) from ticketiq.delegation_status('deleg-1') as d), row('running'::text, true),
    'long after, still running and lapsed (no sweep yet)'
);
select ticketiq.sweep_lapsed('leader');
select is(
    (select (d.status, d.epoch, d.lease_lapsed) from ticketiq.delegation_status('deleg-1') as d),
    row('claimed'::text, 2::bigint, false),
    'claimed by the sweep: epoch 2, not lapsed'
);
select ticketiq.adopt_run('c2', 8, tiq_test.rid(2));
select is(
    (select (d.status, d.epoch, d.lease_lapsed) from ticketiq.delegation_status('deleg-1') as d),
    row('running'::text, 3::bigint, false),
    'adopted: running at epoch 3, not lapsed'
);
select tiq_test.advance(8);
select is(
    (select d.lease_lapsed from ticketiq.delegation_status('deleg-1') as d), true,
    'the adopter''s lease lapses in turn'
);

select * from finish();
rollback;
