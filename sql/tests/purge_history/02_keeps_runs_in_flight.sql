-- purge_history: a running, claimed or suspended run is never touched, nor
-- its audit rows, however old they are.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
-- 1: running, a write in doubt, its lease renewed far into the future.
select tiq_test.new_run('p1', 864000, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write', 'key-1')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
-- 2: lost and claimed, waiting for a resume worker.
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.checkpoint(tiq_test.rid(2), 1, 1);
select tiq_test.lose(tiq_test.rid(2));
-- 3: suspended on a reply.
select tiq_test.new_run('p1', 8, tiq_test.rid(3), true);
select tiq_test.checkpoint(tiq_test.rid(3), 1, 1);
select ticketiq.suspend_run(tiq_test.rid(3), 1, 'reply:conv-1');

select tiq_test.advance(86400 * 7);
select tiq_test.save_fingerprint();

select results_eq(
    $$select * from ticketiq.purge_history(60)$$,
    $$values (0, 0, 0, 0, 0, 0, 0)$$,
    'nothing purged'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'every table as it was');
select results_eq(
    $$select r.run_id, r.status::text from ticketiq.runs as r order by r.run_id$$,
    $$values (tiq_test.rid(1), 'running'::text), (tiq_test.rid(2), 'claimed'), (tiq_test.rid(3), 'suspended')$$,
    'the three runs in flight are all there'
);

select * from finish();
rollback;
