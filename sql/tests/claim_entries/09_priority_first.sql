-- claim_entries: a higher priority starts first, ahead of older entries of
-- every owner (its own too); a priority outside -1000..1000 is refused at
-- accept_entry (TQ004), nothing written.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.accept_entry('a2a', 'old-' || g, '{}', 'alice', 'ra', 'web')
from generate_series(1, 20) as g;
select tiq_test.advance(1);
select ticketiq.accept_entry('a2a', 'urgent', '{}', 'alice', 'ra', 'web', false, true, 10);

select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p1', 8, 1) as c$$,
    $$values ('urgent'::text)$$,
    'the urgent one first, ahead of twenty older'
);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 'x', '{}', 'alice', 'ra', 'web', false, true, 1001)$$,
    'TQ004', null, 'a priority past 1000'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
