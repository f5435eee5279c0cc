-- claim_leader: the holder claiming again renews its lease at the same
-- epoch (no new audit row); after its own lease lapsed it gets epoch + 1.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.claim_leader('sweep', 'p1', 10);
select tiq_test.advance(5);

select results_eq(
    $$select c.is_leader, c.epoch, c.expires_at from ticketiq.claim_leader('sweep', 'p1', 10) as c$$,
    $$values (true, 1::bigint, '2030-01-01 00:00:15+00'::timestamptz)$$,
    'renewed at epoch 1 to now + TTL'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'leader.claimed'), 1::bigint,
    'a renewal is not audited as a claim'
);
select tiq_test.advance(20);
select results_eq(
    $$select c.is_leader, c.epoch from ticketiq.claim_leader('sweep', 'p1', 10) as c$$,
    $$values (true, 2::bigint)$$,
    'after its own lease lapsed the holder reclaims at epoch 2'
);
select is(ticketiq.renew_leader('sweep', 'p1', 1, 10), false, 'its epoch 1 is stale');

select * from finish();
rollback;
