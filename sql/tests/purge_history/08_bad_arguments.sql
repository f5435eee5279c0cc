-- purge_history: an age that is not a positive number of seconds, or a limit
-- under 1, raises TQ004 and deletes nothing (I15).
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.fail_run(tiq_test.rid(1), 1, 'model refused');
select tiq_test.advance(3600);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.purge_history(0)$$, 'TQ004', null, 'age 0');
select throws_ok($$select ticketiq.purge_history(-60)$$, 'TQ004', null, 'a negative age');
select throws_ok($$select ticketiq.purge_history(null)$$, 'TQ004', null, 'a null age');
select throws_ok($$select ticketiq.purge_history('NaN')$$, 'TQ004', null, 'age NaN');
select throws_ok($$select ticketiq.purge_history('Infinity')$$, 'TQ004', null, 'an infinite age');
select throws_ok($$select ticketiq.purge_history(60, 0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select ticketiq.purge_history(60, null)$$, 'TQ004', null, 'a null limit');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing deleted');

select * from finish();
rollback;
