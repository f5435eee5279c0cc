-- start_run: p_parent_run_id makes the new run the child of a delegation:
-- the parent is recorded on the run and in its agent.run.started audit row;
-- a run started without one has no parent.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));

create temp table started on commit drop as
select s.*
from ticketiq.start_run(
    'c1', 'owner@example.com', 'agent:research', 'delegation', 'delegation', false, 8,
    '{"task": "look up"}'::jsonb, null, 'deleg-1', '{}'::jsonb, tiq_test.rid(2), tiq_test.rid(1)
) as s;

select is(
    (select (s.run_id, s.epoch, s.created) from started as s), row(tiq_test.rid(2), 1::bigint, true),
    'the child is created, running at epoch 1'
);
select results_eq(
    $$select r.parent_run_id, r.idempotency_key, r.status::text, r.lease_holder
      from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values (tiq_test.rid(1), 'deleg-1'::text, 'running'::text, 'c1'::text)$$,
    'its parent is recorded; its delegation key is its idempotency key'
);
select is(
    (
        select (a.detail ->> 'parent_run_id')::uuid from ticketiq.audit as a
        where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.started'
    ),
    tiq_test.rid(1),
    'agent.run.started names the parent'
);
select is(
    (select r.parent_run_id from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), null,
    'a run started without a parent has none'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('running'::text, 1::bigint, 'p1'::text)$$,
    'the parent is unchanged'
);

select * from finish();
rollback;
