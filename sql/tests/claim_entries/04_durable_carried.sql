-- claim_entries: the entry's durable flag is carried to its run
-- (runs.durable) and returned: an entry not written ahead starts a run that
-- is not written ahead.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('teams', 'activity-1', false);
select tiq_test.advance(1);
select tiq_test.new_entry('teams', 'activity-2', true);

create temp table claimed on commit drop as
select c.* from ticketiq.claim_entries('p1', 8) as c;

select results_eq(
    $$select c.sender_id, c.durable, r.durable
      from claimed as c inner join ticketiq.runs as r on c.run_id = r.run_id
      order by c.entry_id$$,
    $$values ('activity-1'::text, false, false), ('activity-2', true, true)$$,
    'durable false and true are carried to the runs'
);
select results_eq(
    $$select e.sender_id, r.durable from ticketiq.runs as r
      inner join ticketiq.entries as e on r.idempotency_key = 'entry:' || e.entry_id order by e.sender_id$$,
    $$values ('activity-1'::text, false), ('activity-2', true)$$,
    'runs.durable as the entries said'
);

select * from finish();
rollback;
