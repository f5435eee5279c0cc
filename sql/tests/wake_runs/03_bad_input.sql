-- wake_runs: an empty or null wait key raises TQ004 and wakes nothing.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.wake_runs('')$$, 'TQ004', null, 'an empty key');
select throws_ok($$select ticketiq.wake_runs(null)$$, 'TQ004', null, 'a null key');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing woken');

select * from finish();
rollback;
