-- write_checkpoint: a run that is claimed or finished takes no checkpoint
-- even at its current epoch (TQ006 run_not_running).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.release_run(tiq_test.rid(1), 1, 'shutdown');
select ticketiq.stop_run(tiq_test.rid(2), 1, 'stop');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 2, 1)$$,
    'TQ006', null, 'a released (claimed) run at its new epoch: not running'
);
select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(2), 1, 1)$$,
    'TQ006', null, 'a stopped run: not running'
);
select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 1, 1)$$,
    'TQ002', null, 'the released run at its old epoch: fenced'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
