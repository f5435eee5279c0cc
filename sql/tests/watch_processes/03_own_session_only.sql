-- watch_processes: "seen alive" is honoured only in the session that saw
-- it.  After a restart or failover every session is new: a watcher that
-- passes a stale session token (or none) reaps nobody, so no run is taken
-- over merely because every session ended.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.watch_session('w');
select tiq_test.dead_process('p1');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select results_eq(
    $$select w.process_id, w.alive, w.runs_claimed
      from ticketiq.watch_processes('w', '12345:1', '{p1}') as w where w.process_id = 'p1'$$,
    $$values ('p1'::text, false, 0)$$,
    'a stale session token: reported dead, not reaped'
);
select results_eq(
    $$select w.process_id, w.alive, w.runs_claimed
      from ticketiq.watch_processes('w', null, '{p1}') as w where w.process_id = 'p1'$$,
    $$values ('p1'::text, false, 0)$$,
    'no session token: not reaped'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing was written');

select pg_advisory_unlock_all();
select * from finish();
rollback;
