-- suspend_run: a run that may not wait cannot be suspended, and a wait key
-- must be non-empty (a detail must be given): TQ004, nothing written.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), false);
select tiq_test.new_run('p1', 8, tiq_test.rid(2), true);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1')$$, 'TQ004', null,
    'a run that may not wait'
);
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(2), 1, '')$$, 'TQ004', null, 'an empty wait key'
);
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(2), 1, null)$$, 'TQ004', null, 'a null wait key'
);
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(2), 1, 'reply:conv-1', null)$$, 'TQ004', null, 'a null detail'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
