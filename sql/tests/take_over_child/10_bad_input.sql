-- take_over_child: a TTL that is not positive or an empty holder raises
-- TQ004, and the lapsed child is not claimed either: nothing is written.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 0)$$,
    'TQ004', null, 'ttl 0'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', null)$$,
    'TQ004', null, 'ttl null'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), '', 30)$$,
    'TQ004', null, 'empty holder'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), null, 30)$$,
    'TQ004', null, 'null holder'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'nothing written: the child is not claimed (I15)'
);

select * from finish();
rollback;
