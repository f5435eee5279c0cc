-- get_entry_by_run: a pending entry is found by the run id accept_entry
-- answered, before its run exists, with its owner and run-as; reading
-- changes nothing.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('playground', 'k-1');
select tiq_test.save_fingerprint();

select results_eq(
    $$select g.kind, g.sender_id, g.state, g.owner, g.run_as, g.run_status, g.answer
      from ticketiq.get_entry_by_run((select e.planned_run_id from ticketiq.entries as e)) as g$$,
    $$values ('playground'::text, 'k-1'::text, 'pending'::text, 'owner@example.com'::text,
              'agent:triage'::text, null::text, null::jsonb)$$,
    'pending, found by the planned id'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'reading changed nothing');

select * from finish();
rollback;
