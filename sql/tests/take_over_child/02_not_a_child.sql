-- take_over_child: a run that is not a child of the parent raises TQ004,
-- even when its lease lapsed: another parent's child, a run with no
-- parent, the parent itself, an unknown run; nothing is claimed.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_run('p1', 600, tiq_test.rid(4));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.new_child(tiq_test.rid(4), 'deleg-4', 'c1', 8, tiq_test.rid(3));
select tiq_test.new_run('c1', 8, tiq_test.rid(5));
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(3), 'p1', 30)$$,
    'TQ004', null, 'another parent''s child'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(5), 'p1', 30)$$,
    'TQ004', null, 'a run with no parent'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(1), 'p1', 30)$$,
    'TQ004', null, 'the parent itself'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(99), 'p1', 30)$$,
    'TQ004', null, 'an unknown run'
);
select throws_ok(
    $$select * from ticketiq.take_over_child(tiq_test.rid(1), 1, null, 'p1', 30)$$,
    'TQ004', null, 'no run'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing claimed (I15)');

select * from finish();
rollback;
