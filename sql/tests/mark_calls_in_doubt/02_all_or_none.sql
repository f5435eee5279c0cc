-- mark_calls_in_doubt: a refused element aborts the statement: no call of
-- the batch is marked (a batch is sent together or not at all).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(
    tiq_test.call('w1', 'write'), tiq_test.call('r1', 'read')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.mark_calls_in_doubt(tiq_test.rid(1), 1, 1,
        '[{"call_id": "w1"}, {"call_id": "nope"}]')$$,
    'TQ008', null, 'a call the step does not have'
);
select throws_ok(
    $$select * from ticketiq.mark_calls_in_doubt(tiq_test.rid(1), 1, 1,
        '[{"call_id": "w1"}, {"call_id": "r1"}]')$$,
    'TQ004', null, 'a read (still a read) is never marked'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the refused batches marked nothing');

select * from finish();
rollback;
