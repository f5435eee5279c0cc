-- request_stop: unknown run TQ001, finished run TQ006, empty actor TQ004.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.fail_run(tiq_test.rid(2), 1, 'failed');
select tiq_test.new_run('p1', 8, tiq_test.rid(3));
select ticketiq.seal_answer(tiq_test.rid(3), 1, 1, '{}', 's', 'k', 60);
select ticketiq.hand_on_answer(tiq_test.rid(3), 1);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.request_stop(tiq_test.rid(99), 'alice')$$, 'TQ001', null, 'unknown run');
select throws_ok($$select ticketiq.request_stop(tiq_test.rid(2), 'alice')$$, 'TQ006', null, 'a failed run');
select throws_ok($$select ticketiq.request_stop(tiq_test.rid(3), 'alice')$$, 'TQ006', null, 'a completed run');
select throws_ok($$select ticketiq.request_stop(tiq_test.rid(1), '')$$, 'TQ004', null, 'an empty actor');
select throws_ok($$select ticketiq.request_stop(tiq_test.rid(1), null)$$, 'TQ004', null, 'a null actor');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
