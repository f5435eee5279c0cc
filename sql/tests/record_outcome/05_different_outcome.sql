-- record_outcome: another outcome or settlement for a finished call raises
-- TQ007 step_conflict and changes nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": 7}', 'made');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": 8}', 'made')$$,
    'TQ007', null, 'a different outcome'
);
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": 7}', 'unknown')$$,
    'TQ007', null, 'the same outcome with a different settlement'
);
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', null, 'made')$$,
    'TQ007', null, 'a null outcome'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
