-- renew_leases: a kind that is neither run nor job raises TQ004 and
-- changes nothing (I15).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1)], array[1]::bigint[], 8, 'lease')$$,
    'TQ004', null, 'an unknown kind'
);
select throws_ok(
    $$select ticketiq.renew_leases('p1', array[tiq_test.rid(1)], array[1]::bigint[], 8, null)$$,
    'TQ004', null, 'a null kind'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
