-- record_resume: a settlement for a call the last step does not have raises
-- TQ008 and nothing is recorded, not even the settlements before it (I15).
-- Calls are looked up in the last step's checkpoint: a call of an earlier
-- step, a read included, is unknown.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('r1', 'read'))
);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2, jsonb_build_array(tiq_test.call('w2', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'w2');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3,
        '[{"call_id": "w2", "settlement": "unknown"}, {"call_id": "nope", "settlement": "unknown"}]')$$,
    'TQ008', null, 'an unknown call after a known one'
);
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "unknown"}]')$$,
    'TQ008', null, 'a call of an earlier step'
);
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "r1", "settlement": "redone"}]')$$,
    'TQ008', null, 'a read of an earlier step'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'no settlement and no audit row recorded');

select * from finish();
rollback;
