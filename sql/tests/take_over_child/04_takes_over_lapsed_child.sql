-- take_over_child: a child whose lease lapsed by the database clock is
-- claimed like a sweep claims it (epoch + 1, the loss counted, audited
-- lease_lapsed with taken_over_by_parent) and adopted by the parent's
-- holder (epoch + 1 again); the row returned carries what a resume needs:
-- the child's last checkpoint, its calls (the changing ones: a read has no
-- row and is found in the checkpoint), its lease.
begin;
select plan(10);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.checkpoint(
    tiq_test.rid(2), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write', 'sk-w1'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(2), 1, 1, 'w1');
select tiq_test.advance(9);

create temp table taken on commit drop as
select t.* from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30) as t;

select is((select count(*) from taken), 1::bigint, 'one row');
select is(
    (select (t.run_id, t.epoch, t.loss_count, t.last_step, t.lease_expires_at) from taken as t),
    row(tiq_test.rid(2), 3::bigint, 1, 1, '2030-01-01 00:00:39+00'::timestamptz),
    'the child at epoch 3 (claim 2, adopt 3), one loss, last step 1, leased TTL from now'
);
select is(
    (select (t.checkpoint_body, t.checkpoint_seal, t.checkpoint_seal_key_id) from taken as t),
    row(
        tiq_test.body(jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write', 'sk-w1'))),
        'seal-1'::text, 'k1'::text
    ),
    'the child''s checkpoint with its seal'
);
select is(
    (
        select (jsonb_path_query_array(t.calls, '$[*].call_id'), jsonb_path_query_array(t.calls, '$[*].state'))
        from taken as t
    ),
    row('["w1"]'::jsonb, '["in_doubt"]'::jsonb),
    'its calls as recorded: the write in doubt (the read has no row; it is in the checkpoint)'
);
select is(
    (select (t.entry_point, t.input, t.answer_body) from taken as t),
    row('delegation'::text, '{"task": "look up"}'::jsonb, null::jsonb),
    'the child''s entry point and input; no answer'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder, r.lease_expires_at, r.loss_count::integer, r.parent_run_id
      from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('running'::text, 3::bigint, 'p1'::text, '2030-01-01 00:00:39+00'::timestamptz, 1, tiq_test.rid(1))$$,
    'the child runs again, held by the parent''s holder'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.detail ->> 'lapsed_holder', (a.detail ->> 'loss_count')::integer,
             a.detail ->> 'outcome', (a.detail ->> 'taken_over_by_parent')::uuid
      from ticketiq.audit as a where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.lease_lapsed'$$,
    $$values ('agent.run.lease_lapsed'::text, 2::bigint, 'p1'::text, 'c1'::text, 1, 'claimed'::text,
              tiq_test.rid(1))$$,
    'one lease_lapsed row at epoch 2: lapsed holder c1, taken over by the parent'
);
select results_eq(
    $$select a.epoch, a.actor
      from ticketiq.audit as a where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.adopted'$$,
    $$values (3::bigint, 'p1'::text)$$,
    'the adoption is audited at epoch 3'
);
select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(2), 1, 2)$$,
    'TQ002', null, 'the child''s lost attempt (epoch 1) is fenced'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('running'::text, 1::bigint, 'p1'::text)$$,
    'the parent is unchanged'
);

select * from finish();
rollback;
