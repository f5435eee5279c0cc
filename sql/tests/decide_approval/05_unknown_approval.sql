-- decide_approval: an approval id that names no request raises TQ009
-- unknown_approval and writes nothing.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.decide_approval('00000000-0000-0000-0000-00000000abcd', true, 'alice')$$,
    'TQ009', null, 'unknown approval id'
);
select throws_ok(
    $$select ticketiq.decide_approval(null, false, 'alice')$$,
    'TQ009', null, 'null approval id'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written (I15)');

select * from finish();
rollback;
