-- claim_entries: p_min_age_seconds leaves entries younger than that to
-- other processes (received_at <= now - min age is claimed, so an entry
-- exactly that old is); the default 0 claims every pending entry.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('webhook', 'd-1');
select tiq_test.advance(5);
select tiq_test.new_entry('webhook', 'd-2');
select tiq_test.advance(5);
select tiq_test.new_entry('webhook', 'd-3');

select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p1', 8, 10, 5) as c order by c.entry_id$$,
    $$values ('d-1'::text), ('d-2')$$,
    'min age 5: the entries 10 s and exactly 5 s old are claimed'
);
select results_eq(
    $$select e.sender_id from ticketiq.entries as e where e.state = 'pending'$$,
    $$values ('d-3'::text)$$,
    'the entry received now stays pending'
);
select is_empty(
    $$select 1 from ticketiq.claim_entries('p1', 8, 10, 0.5)$$,
    'min age 0.5: the new entry is still too young'
);
select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p1', 8) as c$$,
    $$values ('d-3'::text)$$,
    'the default (no minimum age) claims it'
);

select * from finish();
rollback;
