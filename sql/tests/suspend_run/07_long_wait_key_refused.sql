-- suspend_run: a wait key over 512 characters raises TQ004 naming it and
-- changes nothing (3,000 used to fail with 54000); wake_runs refuses it too.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(1), 1, repeat('w', 3000))$$,
    'TQ004', 'wait_key must be 1 to 512 characters, got 3000', 'a wait key of 3,000 characters'
);
select throws_ok(
    $$select ticketiq.wake_runs(repeat('w', 513))$$,
    'TQ004', 'wait_key must be 1 to 512 characters, got 513', 'wake_runs: a wait key of 513 characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select s.status from ticketiq.suspend_run(tiq_test.rid(1), 1, repeat(U&'\+01F600', 512)) as s),
    'suspended',
    'a wait key of 512 four-byte characters suspends the run'
);

select * from finish();
rollback;
