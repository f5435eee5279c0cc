-- write_checkpoint: p_step must be the run's last step + 1 (TQ007 step_conflict).
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 2, tiq_test.body(), 's', 'k1')$$,
    'TQ007', null, 'step 2 before step 1'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 0, tiq_test.body(), 's', 'k1')$$,
    'TQ007', null, 'step 0'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, null, tiq_test.body(), 's', 'k1')$$,
    'TQ007', null, 'null step'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('c1', 'write')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 3, tiq_test.body(), 'seal-3', 'k1')$$,
    'TQ007', null, 'step 3 right after step 1'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1, tiq_test.body(), 'another-seal', 'k1')$$,
    'TQ007', null, 'step 1 again with another seal is not a replay'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c1'),
    'pending',
    'the calls of step 1 were not closed by the refused write'
);

select * from finish();
rollback;
