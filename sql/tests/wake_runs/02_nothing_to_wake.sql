-- wake_runs: a key no run waits on wakes nothing (0) and changes nothing;
-- waking the same key twice wakes the runs once.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1');
select tiq_test.save_fingerprint();

select is(ticketiq.wake_runs('reply:conv-9'), 0, 'no run waits on the key: 0');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(ticketiq.wake_runs('reply:conv-1'), 1, 'the first wake wakes the run');
select is(ticketiq.wake_runs('reply:conv-1'), 0, 'the second wakes nothing');

select * from finish();
rollback;
