-- renew_leader: the holder extends its unlapsed lease at its epoch.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.claim_leader('sweep', 'p1', 10);
select tiq_test.advance(9);

select is(ticketiq.renew_leader('sweep', 'p1', 1, 10), true, 'renewed');
select is(
    (select l.expires_at from ticketiq.leader_leases as l where l.name = 'sweep'),
    '2030-01-01 00:00:19+00'::timestamptz,
    'to now + TTL'
);
select is(
    (select l.epoch from ticketiq.leader_leases as l where l.name = 'sweep'), 1::bigint,
    'at the same epoch'
);

select * from finish();
rollback;
