-- claim_entries: at most p_limit entries are claimed per call, oldest
-- first; the rest stay pending for the next call.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('webhook', 'd-1');
select tiq_test.advance(1);
select tiq_test.new_entry('webhook', 'd-2');
select tiq_test.advance(1);
select tiq_test.new_entry('webhook', 'd-3');

select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p1', 8, 2) as c order by c.entry_id$$,
    $$values ('d-1'::text), ('d-2')$$,
    'limit 2: the two oldest'
);
select results_eq(
    $$select e.sender_id from ticketiq.entries as e where e.state = 'pending'$$,
    $$values ('d-3'::text)$$,
    'the newest stays pending'
);
select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p1', 8, 2) as c$$,
    $$values ('d-3'::text)$$,
    'the next call claims it'
);

select * from finish();
rollback;
