-- audit_once: once-only does not rest on the run's row lock alone (a
-- REPEATABLE READ caller would not see a row another session committed
-- meanwhile): ticketiq.audit_once_keys has the primary key (run_id, event,
-- key), so a second row for a key fails (23505) whichever session writes it.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w1', '{}');

select col_is_pk('ticketiq', 'audit_once_keys', array['run_id', 'event', 'key'], 'keyed by run, event and key');
select throws_ok(
    $$insert into ticketiq.audit_once_keys (run_id, event, key, audit_id)
      values (tiq_test.rid(1), 'agent.run.guarantee_downgraded', 'w1', 999)$$,
    '23505', null, 'a second row for the key is refused'
);
select fk_ok('ticketiq', 'audit_once_keys', 'run_id', 'ticketiq', 'runs', 'run_id', 'a key belongs to its run');

select * from finish();
rollback;
