-- record_outcome: 'made' for a changing call that was never marked in doubt
-- is refused (TQ007, write-ahead I5).  A read has no calls row (its result
-- is carried in the next checkpoint's conversation), so any outcome for it
-- is refused as an unknown call (TQ008).
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(
        tiq_test.call('w1', 'write'), tiq_test.call('d1', 'delegation'),
        tiq_test.call('a1', 'remote_agent'), tiq_test.call('r1', 'read')
    )
);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": 1}', 'made')$$,
    'TQ007', null, 'an unmarked write cannot have been made'
);
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'd1', '{"answer": "x"}')$$,
    'TQ007', null, 'an unmarked delegation (made is the default settlement)'
);
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'a1', '{}', 'made')$$,
    'TQ007', null, 'an unmarked remote agent call'
);
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'r1', '{"rows": 2}', 'made')$$,
    'TQ008', null, 'a read has no row: made is refused as an unknown call'
);
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'r1', '{"rows": 2}', 'redone')$$,
    'TQ008', null, 'and so is redone'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'), 'pending',
    'the refused write is still pending'
);
select is(
    tiq_test.call_rows(tiq_test.rid(1), 1), array['w1', 'd1', 'a1'],
    'the changing calls have rows; the read none'
);

select * from finish();
rollback;
