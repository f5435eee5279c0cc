-- hand_on_answer: the hand-on records its entry's outcome: answered, with
-- the answer, at the hand-on time; recorded once: a second hand-on (TQ006)
-- or a later end recorded for the run changes nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select set_config('tiq_test.run', tiq_test.entry_run('task-1')::text, true);
select ticketiq.seal_answer(current_setting('tiq_test.run')::uuid, 1, 1, '{"text": "Done."}', 's', 'k1', 600);
select tiq_test.advance(1);
select ticketiq.hand_on_answer(current_setting('tiq_test.run')::uuid, 1);

select results_eq(
    $$select e.state, e.outcome, e.finished_at from ticketiq.entries as e where e.sender_id = 'task-1'$$,
    $$values ('answered'::text, '{"text": "Done."}'::jsonb, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'the entry is answered with the answer, now'
);
select tiq_test.advance(1);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.hand_on_answer(current_setting('tiq_test.run')::uuid, 1)$$, 'TQ006', null,
    'a second hand-on is refused'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and records nothing');
select ticketiq._finish_entry(
    current_setting('tiq_test.run')::uuid, 'failed', '{"reason": "late"}', '2030-01-01 00:00:02+00'
);
select results_eq(
    $$select e.state, e.outcome, e.finished_at from ticketiq.entries as e where e.sender_id = 'task-1'$$,
    $$values ('answered'::text, '{"text": "Done."}'::jsonb, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'a later end recorded for the run leaves the answered entry as it was'
);

select * from finish();
rollback;
