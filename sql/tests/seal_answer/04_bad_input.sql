-- seal_answer: a null answer, an empty seal or key id, or a retention that
-- is not positive raise TQ004 and seal nothing.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, null, 's', 'k', 60)$$, 'TQ004', null, 'null answer'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{}', '', 'k', 60)$$, 'TQ004', null, 'empty seal'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{}', 's', '', 60)$$, 'TQ004', null, 'empty key id'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{}', 's', 'k', 0)$$, 'TQ004', null, 'retention 0'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{}', 's', 'k', -60)$$, 'TQ004', null,
    'retention negative'
);
select throws_ok(
    $$select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{}', 's', 'k', null)$$, 'TQ004', null, 'retention null'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing sealed');

select * from finish();
rollback;
