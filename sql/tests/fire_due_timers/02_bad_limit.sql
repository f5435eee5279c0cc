-- fire_due_timers: a limit below 1 or null raises TQ004 and fires nothing.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'timer:r1:k1', 1);
select tiq_test.advance(5);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.fire_due_timers(0)$$, 'TQ004', null, 'a limit of 0');
select throws_ok($$select ticketiq.fire_due_timers(null)$$, 'TQ004', null, 'a null limit');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing fired');

select * from finish();
rollback;
