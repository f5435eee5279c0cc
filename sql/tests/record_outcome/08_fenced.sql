-- record_outcome: fenced (I1): unknown run TQ001, lapsed lease TQ003,
-- stale epoch TQ002.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');

select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(99), 1, 1, 'w1', '{}', 'made')$$,
    'TQ001', null, 'unknown run'
);
select tiq_test.advance(8);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{}', 'made')$$,
    'TQ003', null, 'the lease lapsed: the outcome of a call made too late is not recorded'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the lapsed attempt changed nothing');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{}', 'made')$$,
    'TQ002', null, 'taken over: the old attempt is fenced'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'), 'in_doubt',
    'the call is still in doubt for the resume to settle'
);

select * from finish();
rollback;
