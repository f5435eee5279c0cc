-- sweep_lapsed: an empty sweeper, negative max_losses or a limit below 1
-- raise TQ004 and claim nothing.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.advance(9);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.sweep_lapsed('')$$, 'TQ004', null, 'empty sweeper');
select throws_ok($$select ticketiq.sweep_lapsed(null)$$, 'TQ004', null, 'null sweeper');
select throws_ok($$select ticketiq.sweep_lapsed('leader', -1)$$, 'TQ004', null, 'negative max_losses');
select throws_ok($$select ticketiq.sweep_lapsed('leader', 2, 0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select ticketiq.sweep_lapsed('leader', 2, null)$$, 'TQ004', null, 'null limit');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the lapsed run was not claimed');

select * from finish();
rollback;
