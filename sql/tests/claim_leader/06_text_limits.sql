-- claim_leader: a leader name or holder over 512 characters raises TQ004
-- naming it and writes nothing (3,000 used to fail with 54000).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.claim_leader(repeat('n', 3000), 'p1', 10)$$,
    'TQ004', 'name must be 1 to 512 characters, got 3000', 'a leader name of 3,000 characters'
);
select throws_ok(
    $$select ticketiq.claim_leader('sweep', repeat('h', 513), 10)$$,
    'TQ004', 'holder must be 1 to 512 characters, got 513', 'a holder of 513 characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select is(
    (select c.is_leader from ticketiq.claim_leader(repeat(U&'\+01F600', 512), repeat('h', 512), 10) as c),
    true,
    'at 512 characters the lease is claimed'
);

select * from finish();
rollback;
