-- take_over_child: a negative or null p_max_losses raises TQ004, and the
-- lapsed child is not claimed: nothing is written.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30, -1)$$,
    'TQ004', null, 'max_losses -1'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30, null)$$,
    'TQ004', null, 'max_losses null'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written (I15)');

select * from finish();
rollback;
