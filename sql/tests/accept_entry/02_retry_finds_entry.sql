-- accept_entry: a retried request (same kind and sender id) finds the entry
-- already there: created = false, the same entry, no second row, the first
-- payload kept; once claimed, a retry returns its state and run.  The same
-- sender id under another kind is another entry.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('a2a', 'task-1', true, false, '{"try": 1}');
select tiq_test.advance(2);

select results_eq(
    $$select a.entry_id, a.created, a.state, a.run_id
      from ticketiq.accept_entry('a2a', 'task-1', '{"try": 2}', 'owner@example.com', 'agent:triage', 'web') as a$$,
    $$select e.entry_id, false, 'pending'::text, e.planned_run_id from ticketiq.entries as e$$,
    'the retry finds the same entry: created = false, still pending'
);
select is((select count(*) from ticketiq.entries), 1::bigint, 'no second row');
select results_eq(
    $$select e.payload, e.received_at from ticketiq.entries as e$$,
    $$values ('{"try": 1}'::jsonb, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'the first payload and receipt are kept'
);

select ticketiq.claim_entries('p1', 8);
select results_eq(
    $$select a.created, a.state, a.run_id
      from ticketiq.accept_entry('a2a', 'task-1', '{"try": 3}', 'owner@example.com', 'agent:triage', 'web') as a$$,
    $$select false, 'running'::text, e.run_id from ticketiq.entries as e where e.sender_id = 'task-1'$$,
    'a retry after the claim returns the entry running with its run'
);
select is((select count(*) from ticketiq.runs), 1::bigint, 'the retry starts no second run');

select is(
    (select a.created from ticketiq.accept_entry('webhook', 'task-1', '{}', 'o', 'ra', 'web') as a), true,
    'the same sender id of another kind is another entry'
);

select * from finish();
rollback;
