-- claim_entries: an entry is claimed once: a second claim (by another
-- process) finds nothing and starts no run; an entry accepted later is
-- claimed by the next call.  (SKIP LOCKED under a real race is the driver
-- tests' business: one session cannot race itself.)
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('a2a', 'task-1');

select is((select count(*) from ticketiq.claim_entries('p1', 8)), 1::bigint, 'the first claim starts one run');
create temp table after_first on commit drop as
select e.* from ticketiq.entries as e;

select is_empty($$select 1 from ticketiq.claim_entries('p2', 8)$$, 'a second claim finds nothing');
select is((select count(*) from ticketiq.runs), 1::bigint, 'no second run');
select set_eq(
    $$select e::text from ticketiq.entries as e$$, $$select e::text from after_first as e$$,
    'the entry keeps its first run'
);
select is(
    (select r.lease_holder from ticketiq.runs as r), 'p1', 'the run stays with the first claimer'
);

select tiq_test.new_entry('a2a', 'task-2');
select results_eq(
    $$select c.sender_id from ticketiq.claim_entries('p2', 8) as c$$,
    $$values ('task-2'::text)$$,
    'an entry accepted later is claimed by the next call, alone'
);

select * from finish();
rollback;
