-- get_run: a run's state as the API shows it: status, entry point, owner,
-- channel, epoch, lease, losses, last step, parent, wait key, failure
-- reason, sealed answer and times; reading changes nothing.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select ticketiq.seal_answer(tiq_test.rid(2), 1, 1, '{"text": "found"}', 's', 'k1', 600);
select tiq_test.new_run('p1', 8, tiq_test.rid(3));
select ticketiq.fail_run(tiq_test.rid(3), 1, 'gate refused');
select tiq_test.save_fingerprint();

select results_eq(
    $$select g.run_id, g.status, g.entry_point, g.owner, g.channel, g.epoch, g.lease_holder, g.lease_expires_at,
             g.loss_count, g.last_step, g.parent_run_id, g.wait_key, g.failure_reason, g.answer, g.created_at,
             g.finished_at
      from ticketiq.get_run(tiq_test.rid(1)) as g$$,
    $$values (tiq_test.rid(1), 'running'::text, 'playground'::text, 'owner@example.com'::text, 'web'::text,
              1::bigint, 'p1'::text, '2030-01-01 00:00:08+00'::timestamptz, 0, 1, null::uuid, null::text,
              null::text, null::jsonb, '2030-01-01 00:00:00+00'::timestamptz, null::timestamptz)$$,
    'a running run: held by p1, step 1'
);
select results_eq(
    $$select g.parent_run_id, g.answer, g.last_step from ticketiq.get_run(tiq_test.rid(2)) as g$$,
    $$values (tiq_test.rid(1), '{"text": "found"}'::jsonb, 1)$$,
    'a child with its parent and its sealed answer'
);
select results_eq(
    $$select g.status, g.failure_reason, g.lease_holder, g.finished_at from ticketiq.get_run(tiq_test.rid(3)) as g$$,
    $$values ('failed'::text, 'gate refused'::text, null::text, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'a failed run with its reason'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'reading changed nothing');

select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1');
select results_eq(
    $$select g.status, g.epoch, g.wait_key, g.lease_holder from ticketiq.get_run(tiq_test.rid(1)) as g$$,
    $$values ('suspended'::text, 2::bigint, 'reply:conv-1'::text, null::text)$$,
    'a suspended run with its wait key'
);

select * from finish();
rollback;
