-- adopt_run: the claimed run is adopted: epoch + 1 (I2), the holder gets its
-- lease for the TTL, and everything a resume needs comes back in the same
-- statement: the run, its last checkpoint with its seal, no answer.
begin;
select plan(15);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2, jsonb_build_array(tiq_test.call('w1', 'write', 'sk-1')));
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.advance(1);

create temp table adopted on commit drop as
select a.* from ticketiq.adopt_run('p2', 8) as a;

select is((select count(*) from adopted), 1::bigint, 'one run adopted');
select is((select a.run_id from adopted as a), tiq_test.rid(1), 'the claimed run');
select is((select a.epoch from adopted as a), 3::bigint, 'epoch 3: one above the claim''s 2');
select is(
    (select a.lease_expires_at from adopted as a), '2030-01-01 00:00:18+00'::timestamptz,
    'the lease runs TTL from now'
);
select is((select (a.loss_count, a.last_step) from adopted as a), row(1, 2), 'loss count 1, last step 2');
select is(
    (select (a.owner, a.run_as, a.channel, a.entry_point, a.may_wait, a.correlation_id) from adopted as a),
    row(
        'owner@example.com'::text, 'agent:triage'::text, 'web'::text, 'playground'::text, false,
        tiq_test.rid(1)::text
    ),
    'the run''s owner, run_as, channel, entry point, may_wait and correlation id'
);
select is((select a.input from adopted as a), '{"ticket": 42}'::jsonb, 'the run''s input');
select is(
    (select a.checkpoint_body from adopted as a),
    tiq_test.body(jsonb_build_array(tiq_test.call('w1', 'write', 'sk-1'))),
    'the last checkpoint''s body'
);
select is(
    (select (a.checkpoint_seal, a.checkpoint_seal_key_id) from adopted as a), row('seal-2'::text, 'k1'::text),
    'with its seal and key id, for the caller to verify (I9)'
);
select is(
    (select (a.answer_body, a.answer_seal, a.answer_seal_key_id) from adopted as a),
    row(null::jsonb, null::text, null::text),
    'no sealed answer'
);
select is((select a.stop_requested from adopted as a), false, 'no stop requested');
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder, r.lease_expires_at, r.loss_count::integer
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('running'::text, 3::bigint, 'p2'::text, '2030-01-01 00:00:18+00'::timestamptz, 1)$$,
    'the run is running again, held by p2 at epoch 3; adoption counts no loss'
);
select results_eq(
    $$select a.epoch, a.actor, (a.detail ->> 'loss_count')::integer, (a.detail ->> 'step')::integer
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.adopted'$$,
    $$values (3::bigint, 'p2'::text, 1, 2)$$,
    'agent.run.adopted audited at the new epoch'
);
select lives_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 3, 3)$$,
    'the adopter writes the next step at its epoch'
);
select is_empty($$select 1 from ticketiq.adopt_run('p3', 8)$$, 'nothing else to adopt');

select * from finish();
rollback;
