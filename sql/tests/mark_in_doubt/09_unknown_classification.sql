-- mark_in_doubt: an unknown p_classification raises TQ004.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1', 'mutation')$$,
    'TQ004', null, 'unknown classification'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
