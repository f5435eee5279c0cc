-- start_run: a p_parent_run_id that names no run raises TQ001 unknown_run
-- and writes nothing.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.start_run('c1', 'o', 'ra', 'delegation', 'ep', false, 8, '{}', null, 'deleg-1', '{}',
        tiq_test.rid(2), tiq_test.rid(99))$$,
    'TQ001', null, 'unknown parent'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'no run written (I15)');

select * from finish();
rollback;
