-- record_resume: the same record again (same epoch, same settlements: a
-- statement sent again after its commit went unseen) returns the row the
-- first one wrote, its audit id included, and writes nothing; other
-- settlements at that epoch still raise TQ007.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
create temp table first_record as
select * from ticketiq.record_resume(
    tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "unknown"}]'
);
select tiq_test.save_fingerprint();

select results_eq(
    $$select r.run_id, r.step, r.loss_count, r.audit_id from ticketiq.record_resume(
        tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "unknown"}]') as r$$,
    $$select f.run_id, f.step, f.loss_count, f.audit_id from first_record as f$$,
    'the same record again returns the first one''s row'
);
select isnt((select f.audit_id from first_record as f), 0::bigint, 'with its real audit id');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and writes nothing');
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3,
        '[{"call_id": "w1", "settlement": "read_back"}]')$$,
    'TQ007', null, 'other settlements at the same epoch are refused'
);
select is(
    (select count(*)::integer from ticketiq.resume_audit as v where v.run_id = tiq_test.rid(1)),
    1, 'one audit row for the resume'
);

select * from finish();
rollback;
