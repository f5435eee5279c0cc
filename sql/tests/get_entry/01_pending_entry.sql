-- get_entry: a pending entry is read by (kind, sender id): its state, no
-- run, no run status, no answer, no outcome yet; reading changes nothing.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('a2a', 'task-1');
select tiq_test.save_fingerprint();

select results_eq(
    $$select g.kind, g.sender_id, g.state, g.run_id, g.run_status, g.failure_reason, g.answer, g.outcome,
             g.received_at, g.finished_at
      from ticketiq.get_entry('a2a', 'task-1') as g$$,
    $$values ('a2a'::text, 'task-1'::text, 'pending'::text, (select e.planned_run_id from ticketiq.entries as e),
              null::text, null::text, null::jsonb,
              null::jsonb, '2030-01-01 00:00:00+00'::timestamptz, null::timestamptz)$$,
    'pending, no run, no answer'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'reading changed nothing');

select * from finish();
rollback;
