-- resign_leader: each change of leader raises the lease's epoch by one
-- (claim_leader, I2), also when the change follows a resignation: the next
-- leader's epoch must be above the resigned one, never back to 1.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.claim_leader('sweep', 'p1', 10);
select tiq_test.advance(10);
select ticketiq.claim_leader('sweep', 'p2', 10);
select is(
    (select l.epoch from ticketiq.leader_leases as l where l.name = 'sweep'), 2::bigint,
    'p2 leads at epoch 2 after p1''s lease lapsed'
);
select ticketiq.resign_leader('sweep', 'p2');
select is(
    (select c.epoch from ticketiq.claim_leader('sweep', 'p3', 10) as c), 3::bigint,
    'p3 claims after p2 resigned: epoch 3'
);

select * from finish();
rollback;
