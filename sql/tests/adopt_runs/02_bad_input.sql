-- adopt_runs: an empty holder, a TTL that is not positive or a limit outside
-- below 1 raises TQ004 and adopts nothing.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.adopt_runs('', 8, 5)$$, 'TQ004', null, 'empty holder');
select throws_ok($$select ticketiq.adopt_runs(null, 8, 5)$$, 'TQ004', null, 'null holder');
select throws_ok($$select ticketiq.adopt_runs('p2', 0, 5)$$, 'TQ004', null, 'ttl 0');
select throws_ok($$select ticketiq.adopt_runs('p2', 8, 0)$$, 'TQ004', null, 'limit 0');
select throws_ok($$select ticketiq.adopt_runs('p2', 8, -1)$$, 'TQ004', null, 'limit negative');
select throws_ok($$select ticketiq.adopt_runs('p2', 8, null)$$, 'TQ004', null, 'null limit');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the run is still claimed');

select * from finish();
rollback;
