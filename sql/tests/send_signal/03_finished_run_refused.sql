-- send_signal: an unknown run raises TQ001, a finished one TQ006; nothing stored.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.fail_run(tiq_test.rid(1), 1, 'done with it');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.send_signal(tiq_test.rid(9), 'ack', '{}', 'm')$$,
    'TQ001', null, 'an unknown run');
select throws_ok($$select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{}', 'm')$$,
    'TQ006', null, 'a failed run');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing stored');

select * from finish();
rollback;
