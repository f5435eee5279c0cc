-- accept_entry: sender ids are the owner's own.  Two owners sending the same
-- (kind, sender id) get two entries, each with its own run id, and once
-- claimed two runs; one owner's retry still finds its own entry.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
create temp table firsts as
select
    'alice'::text as owner,
    a.*
from ticketiq.accept_entry('ticket_event', '1', '{"n": "a"}', 'alice', 'alice', 'web') as a
union all
select
    'bob'::text as owner,
    b.*
from ticketiq.accept_entry('ticket_event', '1', '{"n": "b"}', 'bob', 'bob', 'web') as b;

select results_eq(
    $$select f.owner, f.created from firsts as f order by f.owner$$,
    $$values ('alice'::text, true), ('bob', true)$$,
    'another owner''s same sender id is a new entry, not the first owner''s'
);
select is((select count(distinct f.run_id) from firsts as f), 2::bigint, 'with a run id of its own');
select results_eq(
    $$select a.created, a.entry_id, a.run_id
      from ticketiq.accept_entry('ticket_event', '1', '{"n": "again"}', 'bob', 'bob', 'web') as a$$,
    $$select false, f.entry_id, f.run_id from firsts as f where f.owner = 'bob'$$,
    'the owner''s retry finds its own entry'
);
select is((select count(*) from ticketiq.claim_entries('p1', 8)), 2::bigint, 'both are claimed');
select results_eq(
    $$select e.owner, r.owner::text, e.payload ->> 'n' from ticketiq.entries as e
      inner join ticketiq.runs as r on e.run_id = r.run_id order by e.owner$$,
    $$values ('alice'::text, 'alice'::text, 'a'::text), ('bob', 'bob', 'b')$$,
    'each entry runs as a run of its own owner with its own payload'
);

select * from finish();
rollback;
