-- claim_leader: a free leader lease is taken at epoch 1 for the TTL;
-- leader.claimed audited.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

select results_eq(
    $$select c.is_leader, c.holder, c.epoch, c.expires_at from ticketiq.claim_leader('sweep', 'p1', 10) as c$$,
    $$values (true, 'p1'::text, 1::bigint, '2030-01-01 00:00:10+00'::timestamptz)$$,
    'p1 becomes leader at epoch 1'
);
select results_eq(
    $$select l.holder, l.epoch, l.acquired_at, l.expires_at from ticketiq.leader_leases as l where l.name = 'sweep'$$,
    $$values ('p1'::text, 1::bigint, '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the lease row is written'
);
select results_eq(
    $$select a.event, a.actor, a.epoch, a.detail ->> 'name' from ticketiq.audit as a where a.event like 'leader.%'$$,
    $$values ('leader.claimed'::text, 'p1'::text, 1::bigint, 'sweep'::text)$$,
    'leader.claimed audited'
);

select * from finish();
rollback;
