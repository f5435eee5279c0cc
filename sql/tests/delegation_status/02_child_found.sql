-- delegation_status: the child started for a delegation key is found by
-- that key: its run id, its parent, status, epoch, lease not lapsed, no
-- failure and no answer yet; reading changes nothing.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-2', 'c1', 8, tiq_test.rid(3));
select tiq_test.advance(3);
select tiq_test.save_fingerprint();

select results_eq(
    $$select d.run_id, d.parent_run_id, d.status, d.epoch, d.lease_lapsed, d.failure_reason, d.answer,
             d.answer_step
      from ticketiq.delegation_status('deleg-1') as d$$,
    $$values (tiq_test.rid(2), tiq_test.rid(1), 'running'::text, 1::bigint, false, null::text, null::jsonb,
              null::integer)$$,
    'the child of deleg-1: running at epoch 1, its lease not lapsed, no answer yet'
);
select is(
    (select d.run_id from ticketiq.delegation_status('deleg-2') as d), tiq_test.rid(3),
    'each key finds its own child'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'reading changed nothing');

select * from finish();
rollback;
