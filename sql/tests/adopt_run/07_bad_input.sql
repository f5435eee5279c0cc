-- adopt_run: an empty holder or a TTL that is not positive raises TQ004 and
-- adopts nothing.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.adopt_run('', 8)$$, 'TQ004', null, 'empty holder');
select throws_ok($$select ticketiq.adopt_run(null, 8)$$, 'TQ004', null, 'null holder');
select throws_ok($$select ticketiq.adopt_run('p2', 0)$$, 'TQ004', null, 'ttl 0');
select throws_ok($$select ticketiq.adopt_run('p2', -3)$$, 'TQ004', null, 'ttl negative');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the run is still claimed');

select * from finish();
rollback;
