-- release_run: a process shutting down hands its run back: claimed at
-- epoch + 1, lease cleared, no loss counted, agent.run.released audited.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.advance(2);

select results_eq(
    $$select r.run_id, r.epoch::bigint from ticketiq.release_run(tiq_test.rid(1), 1, 'SIGTERM') as r$$,
    $$values (tiq_test.rid(1), 2::bigint)$$,
    'returns the run and its new epoch 2'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.loss_count::integer, r.lease_holder, r.lease_expires_at, r.finished_at
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 2::bigint, 0, null::text, null::timestamptz, null::timestamptz)$$,
    'claimed at epoch 2, lease cleared, no loss counted'
);
select results_eq(
    $$select a.epoch, a.actor, a.detail ->> 'reason', (a.detail ->> 'step')::integer
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.released'$$,
    $$values (2::bigint, 'p1'::text, 'SIGTERM'::text, 1)$$,
    'agent.run.released audited at the new epoch with the reason'
);
select is_empty(
    $$select 1 from ticketiq.sweep_lapsed('leader')$$,
    'the sweep has nothing to claim: the run is not running'
);
select results_eq(
    $$select a.epoch, a.loss_count from ticketiq.adopt_run('p2', 8) as a$$,
    $$values (3::bigint, 0)$$,
    'adopted at once at epoch 3, still no loss'
);
select is(
    (select count(*) from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.lease_lapsed'),
    0::bigint,
    'no lapse audited'
);
select is(
    (
        select r.epoch::bigint from ticketiq.release_run(tiq_test.rid(1), 3) as r
    ),
    4::bigint,
    'the reason defaults (shutdown) and the epoch grows again'
);
select is(
    (
        select a.detail ->> 'reason' from ticketiq.audit as a
        where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.released' and a.epoch = 4
    ),
    'shutdown',
    'default reason shutdown'
);

select * from finish();
rollback;
