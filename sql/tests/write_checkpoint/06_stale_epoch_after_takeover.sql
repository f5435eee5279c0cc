-- write_checkpoint: after a takeover (sweep + adopt) the old attempt's epoch is
-- stale: TQ002 fenced, nothing changes (I1); the new owner writes on.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('c1', 'write')));
select is(tiq_test.take_over(tiq_test.rid(1), 'p2'), 3::bigint, 'sweep and adoption raise the epoch to 3');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 2, tiq_test.body(), 'seal-2', 'k1')$$,
    'TQ002', null, 'the stalled attempt (epoch 1) is fenced'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1, tiq_test.body(
        jsonb_build_array(tiq_test.call('c1', 'write'))), 'seal-1', 'k1')$$,
    'TQ002', null, 'even a replay of its own step 1 is fenced'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 2, 2, tiq_test.body(), 'seal-2', 'k1')$$,
    'TQ002', null, 'the sweep''s epoch 2 is no writer''s epoch'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the fenced writes changed nothing');
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c1'), 'pending',
    'the old step''s calls were not closed by the fenced write'
);
select lives_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 3, 2)$$,
    'the adopting attempt (epoch 3) writes step 2'
);

select * from finish();
rollback;
