-- claim_entries: one owner's backlog does not hold another owner's entry
-- back: a claim of 2 with 5 of alice's entries waiting and then one of
-- bob's takes alice's oldest and bob's, not alice's two oldest.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.accept_entry('a2a', 'alice-' || g, '{}', 'alice', 'ra', 'web')
from generate_series(1, 5) as g;
select tiq_test.advance(1);
select ticketiq.accept_entry('a2a', 'bob-1', '{}', 'bob', 'ra', 'web');

select results_eq(
    $$select c.owner, c.sender_id from ticketiq.claim_entries('p1', 8, 2) as c order by c.owner$$,
    $$values ('alice'::text, 'alice-1'::text), ('bob', 'bob-1')$$,
    'alice''s first and bob''s first'
);
select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p1', 8, 10) as c$$,
    $$values ('alice-2'::text), ('alice-3'), ('alice-4'), ('alice-5')$$,
    'then alice''s others, oldest first'
);

select * from finish();
rollback;
