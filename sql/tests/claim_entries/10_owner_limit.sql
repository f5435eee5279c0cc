-- claim_entries: with p_owner_limit 2, an owner with two runs in flight
-- gets no third until one ends, while another owner's entry starts; a limit
-- under 1 is refused (TQ004).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.accept_entry('a2a', 'alice-' || g, '{}', 'alice', 'ra', 'web')
from generate_series(1, 4) as g;
select ticketiq.accept_entry('a2a', 'bob-1', '{}', 'bob', 'ra', 'web');

select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p1', 8, 10, 0, 2) as c order by c.sender_id$$,
    $$values ('alice-1'::text), ('alice-2'), ('bob-1')$$,
    'alice''s two, and bob''s'
);
select is_empty(
    $$select 1 from ticketiq.claim_entries('p1', 8, 10, 0, 2)$$, 'alice is at her limit'
);
select ticketiq.fail_run(e.run_id, 1, 'done') from ticketiq.entries as e where e.sender_id = 'alice-1';
select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p1', 8, 10, 0, 2) as c$$,
    $$values ('alice-3'::text)$$,
    'one ended: her next'
);
select throws_ok(
    $$select * from ticketiq.claim_entries('p1', 8, 10, 0, 0)$$, 'TQ004', null, 'a limit of 0'
);

select * from finish();
rollback;
