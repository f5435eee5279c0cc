-- restart_run: refused, nothing changed: an unknown run (TQ001), a running or
-- completed one (TQ006, TQ005 for a sealed answer), one not written ahead
-- (TQ006), a child whose parent is in flight (TQ006), an empty actor (TQ004).
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2), false, false);
select ticketiq.fail_run(tiq_test.rid(2), 1, 'failed');
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(3));
select ticketiq.fail_run(tiq_test.rid(3), 1, 'failed');
select tiq_test.new_run('p1', 8, tiq_test.rid(4));
select ticketiq.seal_answer(tiq_test.rid(4), 1, 1, '{}', 's', 'k', 60);
select tiq_test.new_run('p1', 8, tiq_test.rid(5));
select ticketiq.fail_run(tiq_test.rid(5), 1, 'failed');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.restart_run(tiq_test.rid(99), 'alice')$$, 'TQ001', null, 'unknown run');
select throws_ok($$select ticketiq.restart_run(tiq_test.rid(1), 'alice')$$, 'TQ006', null, 'a running run');
select throws_ok($$select ticketiq.restart_run(tiq_test.rid(2), 'alice')$$, 'TQ006', null, 'not written ahead');
select throws_ok($$select ticketiq.restart_run(tiq_test.rid(3), 'alice')$$, 'TQ006', null,
    'a child whose parent runs');
select throws_ok($$select ticketiq.restart_run(tiq_test.rid(4), 'alice')$$, 'TQ006', null,
    'a run with its answer sealed (running until handed on)');
select throws_ok($$select ticketiq.restart_run(tiq_test.rid(5), '')$$, 'TQ004', null, 'an empty actor');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
