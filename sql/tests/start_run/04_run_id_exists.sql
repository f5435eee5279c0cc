-- start_run: an explicit run id that already exists raises TQ007 step_conflict.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.start_run('p2', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, null, '{}',
        tiq_test.rid(1))$$,
    'TQ007', null, 'a second start with the same run id is refused'
);
select is(
    (select r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'p1',
    'the existing run keeps its holder'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed (I15)');

select * from finish();
rollback;
