-- mark_in_doubt: a call the step does not have raises TQ008 unknown_call,
-- also when the caller says the tool is a write now (no row is recorded
-- for a call id the checkpoint does not list), and for a read of an
-- earlier step.  A null call id is malformed: TQ004 (schema 10).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r0', 'read')));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2, jsonb_build_array(tiq_test.call('w1', 'write')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'w9')$$,
    'TQ008', null, 'no call w9 in step 2'
);
select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'w9', 'write')$$,
    'TQ008', null, 'no call w9 in step 2, classification write given'
);
select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'r0', 'write')$$,
    'TQ008', null, 'the read r0 belongs to step 1, not step 2'
);
select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, null)$$,
    'TQ004', 'call_id must be 1 to 256 characters, got null', 'a null call id'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
