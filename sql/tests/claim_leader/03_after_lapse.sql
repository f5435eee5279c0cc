-- claim_leader: once the lease lapsed by the database clock another holder
-- takes it at epoch + 1; the old holder can no longer renew.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.claim_leader('sweep', 'p1', 10);
select tiq_test.advance(10);

select results_eq(
    $$select c.is_leader, c.holder, c.epoch, c.expires_at from ticketiq.claim_leader('sweep', 'p2', 10) as c$$,
    $$values (true, 'p2'::text, 2::bigint, '2030-01-01 00:00:20+00'::timestamptz)$$,
    'p2 takes the lapsed lease at epoch 2'
);
select is(
    (select l.acquired_at from ticketiq.leader_leases as l where l.name = 'sweep'),
    '2030-01-01 00:00:10+00'::timestamptz,
    'acquired now'
);
select is(ticketiq.renew_leader('sweep', 'p1', 1, 10), false, 'the old leader cannot renew');
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'leader.claimed'), 2::bigint,
    'each change of leader is audited'
);

select * from finish();
rollback;
