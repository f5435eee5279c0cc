-- take_over_child: a lapsed child that was not written ahead (durable
-- false) is failed 'interrupted', exactly as the sweep fails it (the
-- take-over "claims it exactly as a sweep would"; start_run: "lost, it is
-- failed ('interrupted'), never resumed"): no row is returned, nothing is
-- adopted.  A non-durable child failed by the sweep is the reference.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select ticketiq.start_run(
    'c1', 'o', 'ra', 'delegation', 'delegation', false, 8, '{}', null, 'deleg-s', '{}', tiq_test.rid(2),
    tiq_test.rid(1), false
);
select ticketiq.start_run(
    'c1', 'o', 'ra', 'delegation', 'delegation', false, 20, '{}', null, 'deleg-t', '{}', tiq_test.rid(3),
    tiq_test.rid(1), false
);
select tiq_test.advance(9);
select ticketiq.sweep_lapsed('leader');
select tiq_test.advance(12);

select results_eq(
    $$select r.status::text,
        r.failure_reason like 'interrupted:%' from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('failed'::text, true)$$,
    'reference: the sweep fails the non-durable child, interrupted'
);
select is_empty(
    $$select 1 from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(3), 'p1', 30)$$,
    'the take-over returns no row: nothing to resume'
);
select results_eq(
    $$select r.status::text, r.failure_reason like 'interrupted:%', r.lease_holder
      from ticketiq.runs as r where r.run_id = tiq_test.rid(3)$$,
    $$values ('failed'::text, true, null::text)$$,
    'the take-over fails the non-durable child, interrupted'
);
select is(
    (select count(*) from ticketiq.audit as a where a.run_id = tiq_test.rid(3) and a.event = 'agent.run.failed'),
    1::bigint,
    'agent.run.failed audited'
);

select * from finish();
rollback;
