-- suspend_run: a detail that is not a JSON object is malformed input:
-- TQ004 like every other JSON-object argument of the API (release_run's
-- outcomes, request_approval's summary, start_run's meta), not the audit
-- table's check violation (23514); nothing is written.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1', '[1]')$$, 'TQ004', null, 'a detail array'
);
select throws_ok(
    $$select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1', '"waiting"')$$, 'TQ004', null,
    'a detail string'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
