-- watch_processes: a process seen alive in this session whose token is gone
-- is dead.  It is marked ended and audited, and its run, job and leader
-- leases are cut to the grace (0.3 s) -- long before they would lapse.
-- Once the grace has passed, a watch claims its runs through the sweep's
-- claim (epoch + 1, loss counted, claim_reason session_ended,
-- agent.run.lease_lapsed audited with the reason).  Other processes' runs
-- are untouched; the dead process, were it alive, is fenced.
begin;
select plan(11);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.watch_session('w');
select tiq_test.dead_process('p1');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.new_run('p2', 8, tiq_test.rid(2));
select ticketiq.claim_leader('sweeper', 'p1', 6);
select ticketiq.enqueue_job('report', '{}', true);
select ticketiq.claim_job('p1', 8);
select tiq_test.advance(1);

select results_eq(
    $$select w.process_id, w.alive, w.runs_claimed
      from ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{p1,w}', 2, 0.3) as w$$,
    $$values ('p1'::text, false, 0), ('w', true, 0)$$,
    'p1 is reported dead; nothing is claimed within the grace'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint,
        r.lease_expires_at from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('running'::text, 1::bigint, '2030-01-01 00:00:01.3+00'::timestamptz)$$,
    'its run''s lease is cut to the grace'
);
select results_eq(
    $$select p.stopped_at, p.ended_reason from ticketiq.processes as p where p.process_id = 'p1'$$,
    $$values ('2030-01-01 00:00:01+00'::timestamptz, 'liveness session ended'::text)$$,
    'the process is marked ended'
);
select results_eq(
    $$select a.actor, a.detail ->> 'process_id' from ticketiq.audit as a where a.event = 'process.session_ended'$$,
    $$values ('w'::text, 'p1'::text)$$,
    'process.session_ended is audited once'
);
select is(
    (select l.expires_at from ticketiq.leader_leases as l where l.name = 'sweeper'),
    '2030-01-01 00:00:01.3+00'::timestamptz,
    'its leader lease is cut to the grace'
);
select is(
    (select j.lease_expires_at from ticketiq.jobs as j where j.holder = 'p1'),
    '2030-01-01 00:00:01.3+00'::timestamptz,
    'its job lease is cut to the grace (the job sweep takes it back)'
);

select tiq_test.advance(0.5);
select results_eq(
    $$select w.process_id, w.alive, w.runs_claimed
      from ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{w}', 2, 0.3) as w$$,
    $$values ('p1'::text, false, 1), ('w', true, 0)$$,
    'after the grace, the next watch claims its run'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.loss_count::integer, r.lease_holder, r.claim_reason,
        r.last_step::integer
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 2::bigint, 1, null::text, 'session_ended'::text, 1)$$,
    'claimed at epoch 2 with the loss counted, 6.5 s before its lease would have lapsed'
);
select results_eq(
    $$select a.actor, a.detail ->> 'lapsed_holder', a.detail ->> 'reason', a.detail ->> 'outcome'
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.lease_lapsed'$$,
    $$values ('w'::text, 'p1'::text, 'session_ended'::text, 'claimed'::text)$$,
    'the claim is audited with the reason'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('running'::text, 1::bigint, 'p2'::text)$$,
    'another process''s run is untouched'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 2, tiq_test.body(), 'seal', 'k1')$$,
    'TQ002', null,
    'the dead process, were it alive, is fenced'
);

select pg_advisory_unlock_all();
select * from finish();
rollback;
