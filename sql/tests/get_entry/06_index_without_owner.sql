-- get_entry: an entry found by (kind, sender id) without its owner (an
-- operator's lookup) reads an index on (kind, sender id), not every entry of
-- the kind (issue 46, finding 8: the owner sits between them in the unique
-- key, so that lookup walked every entry of the kind).  The plan of the
-- function's own query, with statistics of 5,000 entries of one kind.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.accept_entry('a2a', 'task-' || i, '{}', 'owner-' || (i % 50), 'ra', 'a2a')
from generate_series(1, 5000) as i;
analyze ticketiq.entries;

select matches(
    tiq_test.plan_of($$
        select e.entry_id from ticketiq.entries as e
        where e.kind = 'a2a' and e.sender_id = 'task-17' and (null::text is null or e.owner = null::text)
        order by e.entry_id
    $$),
    'entries_kind_sender_id_idx',
    'without an owner: the index of (kind, sender id)'
);
select results_eq(
    $$select g.sender_id, g.state from ticketiq.get_entry('a2a', 'task-17') as g$$,
    $$values ('task-17'::text, 'pending'::text)$$,
    'and get_entry finds the entry'
);

select * from finish();
rollback;
