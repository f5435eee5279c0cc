-- mark_in_doubt: only calls of the run's last written step can be marked
-- (TQ007 step_conflict).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2, jsonb_build_array(tiq_test.call('w2', 'write')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1')$$,
    'TQ007', null, 'a call of the previous step'
);
select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 3, 'w2')$$,
    'TQ007', null, 'a step not written yet'
);
select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, null, 'w2')$$,
    'TQ007', null, 'a null step'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select lives_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 2, 'w2')$$,
    'the last step''s call is marked'
);

select * from finish();
rollback;
