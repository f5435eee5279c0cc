-- claim_leader: a second holder cannot claim while the lease is held; it
-- learns who holds it and nothing changes.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.claim_leader('sweep', 'p1', 10);
select tiq_test.advance(9.999);
select tiq_test.save_fingerprint();

select results_eq(
    $$select c.is_leader, c.holder, c.epoch, c.expires_at from ticketiq.claim_leader('sweep', 'p2', 10) as c$$,
    $$values (false, 'p1'::text, 1::bigint, '2030-01-01 00:00:10+00'::timestamptz)$$,
    'p2 is not leader; p1 holds the lease at epoch 1'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select c.is_leader from ticketiq.claim_leader('other-lease', 'p2', 10) as c), true,
    'another lease name is independent'
);

select * from finish();
rollback;
