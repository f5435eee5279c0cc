-- release_liveness: a session that does not hold the process's token (its
-- lock is gone, or another session holds it) gets false and changes
-- nothing: the process stays unstopped, so peers keep watching it.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.register_process('p1', 'h', 1);
-- p1 held its token on this session, then the lock went (as when its
-- session is another one): this session no longer holds it.
select pg_advisory_unlock(29809, h.liveness_key) from ticketiq.hold_liveness('p1') as h;
select tiq_test.save_fingerprint();

select is(ticketiq.release_liveness('p1'), false, 'not held by this session: false');
select is(
    (select p.stopped_at from ticketiq.processes as p where p.process_id = 'p1'), null,
    'the process is not marked stopped'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
