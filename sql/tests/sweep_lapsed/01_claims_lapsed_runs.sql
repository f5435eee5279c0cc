-- sweep_lapsed: each running run whose lease lapsed by the database clock is
-- claimed: epoch + 1 (I2), loss counted (I4), status claimed, lease cleared,
-- agent.run.lease_lapsed audited.  Fresh and finished runs are untouched.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select tiq_test.new_run('p1', 8, tiq_test.rid(3));
select ticketiq.fail_run(tiq_test.rid(3), 1, 'gate refused');
select tiq_test.new_run('p1', 8, tiq_test.rid(4));
select ticketiq.stop_run(tiq_test.rid(4), 1);
select tiq_test.advance(10);

create temp table untouched_before on commit drop as
select r.* from ticketiq.runs as r where r.run_id <> tiq_test.rid(1);

create temp table swept on commit drop as
select s.* from ticketiq.sweep_lapsed('leader-a') as s;

select results_eq(
    $$select s.run_id, s.epoch, s.loss_count, s.status, s.lapsed_holder, s.lapsed_at from swept as s$$,
    $$values (tiq_test.rid(1), 2::bigint, 1, 'claimed'::text, 'p1'::text, '2030-01-01 00:00:08+00'::timestamptz)$$,
    'returns only the lapsed running run, claimed at epoch 2 with one loss'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.loss_count::integer, r.lease_holder, r.lease_expires_at,
        r.finished_at, r.updated_at
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 2::bigint, 1, null::text, null::timestamptz, null::timestamptz,
              '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the run is claimed at epoch 2, loss counted, lease cleared, not finished'
);
select is(
    (select r.last_step::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 1,
    'its last step is kept for the resume'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.detail ->> 'lapsed_holder', (a.detail ->> 'loss_count')::integer,
             a.detail ->> 'outcome', (a.detail ->> 'lapsed_at')::timestamptz
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.lease_lapsed'$$,
    $$values ('agent.run.lease_lapsed'::text, 2::bigint, 'leader-a'::text, 'p1'::text, 1, 'claimed'::text,
              '2030-01-01 00:00:08+00'::timestamptz)$$,
    'one agent.run.lease_lapsed audit row by the sweeper'
);
select set_eq(
    $$select r::text from ticketiq.runs as r where r.run_id <> tiq_test.rid(1)$$,
    $$select r::text from untouched_before as r$$,
    'the fresh, failed and stopped runs are untouched'
);
select is(
    (select r.lease_expires_at from ticketiq.runs as r where r.run_id = tiq_test.rid(2)),
    '2030-01-01 00:01:00+00'::timestamptz,
    'the fresh run keeps its lease'
);
select is(
    (select rf.status from ticketiq.runs_in_flight as rf where rf.run_id = tiq_test.rid(1)), 'claimed',
    'runs_in_flight shows the claimed run'
);
select is(
    (select count(*) from ticketiq.transcript_entries as t where t.run_id = tiq_test.rid(1)), 0::bigint,
    'a claim is not a failure: the transcript is not told'
);
select is_empty(
    $$select 1 from ticketiq.sweep_lapsed('leader-a')$$,
    'nothing else to sweep'
);

select * from finish();
rollback;
