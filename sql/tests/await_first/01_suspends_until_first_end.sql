-- await_first: a run whose children all still run gives its lease up
-- (suspended at epoch + 1 on first:<run id>:<group>, the children audited
-- with the suspension); the first child to end is recorded as the group's
-- first end and wakes it (claimed, epoch + 1, agent.run.woken).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.new_child(tiq_test.rid(1), 'k.0', 'c1', 60, tiq_test.rid(11));
select tiq_test.new_child(tiq_test.rid(1), 'k.1', 'c1', 60, tiq_test.rid(12));

select results_eq(
    $$select f.outcome, f.child_run_id, f.place, f.epoch
      from ticketiq.await_first(tiq_test.rid(1), 1, 'k', array[tiq_test.rid(11), tiq_test.rid(12)],
          '{"call_id": "race#0"}') as f$$,
    $$values ('suspended'::text, null::uuid, null::integer, 2::bigint)$$,
    'none ended: suspended at epoch 2'
);
select results_eq(
    $$select r.status::text, r.wait_key, r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('suspended'::text, 'first:' || tiq_test.rid(1)::text || ':k', null::text)$$,
    'suspended on the group''s wait key, no lease'
);
select is(
    (select a.detail from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.suspended'),
    jsonb_build_object('call_id', 'race#0', 'children', jsonb_build_array(tiq_test.rid(11), tiq_test.rid(12)),
        'wait_key', 'first:' || tiq_test.rid(1)::text || ':k', 'step', 0),
    'the suspension is audited with the children'
);

select tiq_test.advance(1);
select ticketiq.fail_run(tiq_test.rid(12), 1, 'tool broken');
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.claim_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 3::bigint, 'woken'::text)$$,
    'the second child''s end wakes the run'
);
select results_eq(
    $$select f.child_run_id, f.place, f.ended_at from ticketiq.first_ends as f where f.run_id = tiq_test.rid(1)$$,
    $$values (tiq_test.rid(12), 1, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'and is recorded as the first end, with its place'
);

select * from finish();
rollback;
