-- await_first: a group of no child, of more than 64, with a null or a
-- duplicate, of two dimensions, naming a run that is not the run's child or a child already
-- in another group, a bad group or detail: TQ004, nothing written.
begin;
select plan(11);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.new_run('p1', 60, tiq_test.rid(2), true);
select tiq_test.new_child(tiq_test.rid(1), 'k.0', 'c1', 60, tiq_test.rid(11));
select tiq_test.new_child(tiq_test.rid(2), 'o.0', 'c1', 60, tiq_test.rid(21));
select tiq_test.new_child(tiq_test.rid(1), 'g.0', 'c1', 60, tiq_test.rid(12));
select tiq_test.new_run('p1', 60, tiq_test.rid(3), false);
select tiq_test.new_child(tiq_test.rid(3), 'h.0', 'c1', 60, tiq_test.rid(31));
select tiq_test.new_child(tiq_test.rid(3), 'h.1', 'c1', 60, tiq_test.rid(32));
select ticketiq.await_first(tiq_test.rid(3), 1, 'h', array[tiq_test.rid(31)]);

select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, 'k', array[]::uuid[])$$,
    'TQ004', null, 'no child'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, 'k', null)$$,
    'TQ004', null, 'null children'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, 'k', array_fill(tiq_test.rid(21), array[65]))$$,
    'TQ004', null, 'more than 64'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, 'k', array[tiq_test.rid(21), tiq_test.rid(21)])$$,
    'TQ004', null, 'a duplicate'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, 'k', array[[tiq_test.rid(21)], [tiq_test.rid(11)]])$$,
    'TQ004', null, 'two dimensions'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, 'k', array[tiq_test.rid(21), null])$$,
    'TQ004', null, 'a null child'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, 'k', array[tiq_test.rid(21), tiq_test.rid(11)])$$,
    'TQ004', null, 'another run''s child'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, '', array[tiq_test.rid(21)])$$,
    'TQ004', null, 'an empty group'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(2), 1, 'k', array[tiq_test.rid(21)], '[]')$$,
    'TQ004', null, 'detail not an object'
);
select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(3), 1, 'k', array[tiq_test.rid(32), tiq_test.rid(31)])$$,
    'TQ004', null, 'a child already in another group'
);
select results_eq(
    $$select w.run_id, w.wait_key from ticketiq.first_waits as w$$,
    $$values (tiq_test.rid(31), 'first:' || tiq_test.rid(3)::text || ':h')$$,
    'nothing joined a group but the first call''s child'
);

select * from finish();
rollback;
