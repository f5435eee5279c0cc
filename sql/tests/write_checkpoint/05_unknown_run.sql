-- write_checkpoint: an unknown run raises TQ001 unknown_run.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(99), 1, 1, tiq_test.body(), 'seal-1', 'k1')$$,
    'TQ001', null, 'no such run'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
