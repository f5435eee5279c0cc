-- sweep_lapsed: a run lost more than twice is failed with its reason, its
-- transcript told and the failure audited; it is never resumed (I4).
begin;
select plan(12);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);

select is(tiq_test.take_over(tiq_test.rid(1), 'p2'), 3::bigint, 'first loss: claimed (2), adopted (3)');
select is(tiq_test.take_over(tiq_test.rid(1), 'p3'), 5::bigint, 'second loss: claimed (4), adopted (5)');
select is(
    (select r.loss_count::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 2,
    'two losses counted'
);

select tiq_test.advance(9);
create temp table swept on commit drop as
select s.* from ticketiq.sweep_lapsed('leader-a') as s;

select results_eq(
    $$select s.run_id, s.epoch, s.loss_count, s.status, s.lapsed_holder from swept as s$$,
    $$values (tiq_test.rid(1), 6::bigint, 3, 'failed'::text, 'p3'::text)$$,
    'the third loss returns the run failed at epoch 6'
);
select results_eq(
    $$select r.status::text, r.loss_count::integer, r.lease_holder, r.finished_at
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('failed'::text, 3, null::text, '2030-01-01 00:00:27+00'::timestamptz)$$,
    'the run is failed and finished, three losses counted'
);
select matches(
    (select r.failure_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    'lost 3 times',
    'the reason says it was lost 3 times'
);
select matches(
    (select r.failure_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    'p3',
    'the reason names the last holder'
);
select results_eq(
    $$select t.kind, coalesce(t.body ->> 'reason' = r.failure_reason, false)
      from ticketiq.transcript_entries as t
      inner join ticketiq.runs as r on t.run_id = r.run_id
      where t.run_id = tiq_test.rid(1) order by t.entry_id$$,
    $$values ('resumed'::text, false), ('resumed', false), ('failed', true)$$,
    'each resume told (nothing to settle), then one entry of kind failed with the reason'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, (a.detail ->> 'loss_count')::integer
      from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.event in ('agent.run.failed', 'agent.run.lease_lapsed') and a.epoch = 6
      order by a.audit_id$$,
    $$values ('agent.run.lease_lapsed'::text, 6::bigint, 'leader-a'::text, 3),
             ('agent.run.failed', 6, 'leader-a', 3)$$,
    'the lapse and the failure are audited'
);
select is(
    (select count(*) from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.lease_lapsed'),
    3::bigint,
    'one lease_lapsed audit row per loss'
);
select is_empty(
    $$select 1 from ticketiq.adopt_run('p4', 8, tiq_test.rid(1))$$,
    'the failed run is never adopted again'
);
select is(
    (select count(*) from ticketiq.runs_in_flight as rf where rf.run_id = tiq_test.rid(1)), 0::bigint,
    'it is no longer in flight'
);

select * from finish();
rollback;
