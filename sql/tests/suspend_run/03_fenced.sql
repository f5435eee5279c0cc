-- suspend_run: fenced like every write of an attempt: unknown run TQ001, a
-- stale epoch TQ002, a lapsed lease TQ003, a run not running (already
-- suspended) TQ006; nothing is written.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select tiq_test.new_run('p1', 60, tiq_test.rid(2), true);
select ticketiq.suspend_run(tiq_test.rid(2), 1, 'reply:conv-2');
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(9), 1, 'reply:conv-1')$$, 'TQ001', null, 'an unknown run'
);
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(1), 2, 'reply:conv-1')$$, 'TQ002', null, 'a stale epoch'
);
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1')$$, 'TQ003', null, 'a lapsed lease'
);
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(2), 2, 'reply:conv-3')$$, 'TQ006', null,
    'a suspended run at its new epoch: not running'
);
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(2), 1, 'reply:conv-3')$$, 'TQ002', null,
    'a suspended run at its old epoch: fenced'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
