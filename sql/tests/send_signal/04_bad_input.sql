-- send_signal: an empty name or sender key, a null payload or an empty actor
-- raise TQ004; nothing stored.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.send_signal(tiq_test.rid(1), '', '{}', 'm')$$, 'TQ004', null, 'no name');
select throws_ok($$select ticketiq.send_signal(tiq_test.rid(1), 'a', '{}', '')$$, 'TQ004', null, 'no key');
select throws_ok($$select ticketiq.send_signal(tiq_test.rid(1), 'a', null, 'm')$$, 'TQ004', null, 'null payload');
select throws_ok($$select ticketiq.send_signal(tiq_test.rid(1), 'a', '{}', 'm', '')$$, 'TQ004', null, 'empty actor');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing stored');

select * from finish();
rollback;
