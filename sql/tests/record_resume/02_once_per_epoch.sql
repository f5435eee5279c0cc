-- record_resume: one crash_resumed row per resume (I14): a record at the same
-- epoch that settles a call otherwise than this resume already did raises
-- TQ007 and changes nothing; the next resume (a new epoch) records its own.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "unknown"}]');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "read_back"}]')$$,
    'TQ007', null, 'a second record of the same call by the same resume'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select tiq_test.take_over(tiq_test.rid(1), 'p3');
select lives_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 5, '[]')$$,
    'the next resume (epoch 5) is recorded'
);
select results_eq(
    $$select v.epoch, v.loss_count from ticketiq.resume_audit as v
      where v.run_id = tiq_test.rid(1) order by v.audit_id$$,
    $$values (3::bigint, 1), (5::bigint, 2)$$,
    'one row per resume, each with its loss count'
);

select * from finish();
rollback;
