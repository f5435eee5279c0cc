-- record_outcome: a call the step does not have raises TQ008 unknown_call.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'nope', '{}', 'skipped')$$,
    'TQ008', null, 'unknown call id'
);
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 2, 'w1', '{}', 'skipped')$$,
    'TQ008', null, 'a step with no such call'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
