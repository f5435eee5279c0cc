-- sweep_lapsed: a lapsed run that was not written ahead (runs.durable
-- false) is not claimed for a resume but failed at once, 'interrupted',
-- whatever p_max_losses: loss counted, lease_lapsed and agent.run.failed
-- audited, the transcript told and its entry failed with the reason.  A
-- durable run lapsing beside it is claimed.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select set_config('tiq_test.run', tiq_test.entry_run('task-1', 'p1', 8, false)::text, true);
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.advance(10);

create temp table swept on commit drop as
select s.* from ticketiq.sweep_lapsed('leader', 5) as s;

select results_eq(
    $$select s.run_id, s.epoch, s.loss_count, s.status from swept as s order by s.status$$,
    $$values (tiq_test.rid(2), 2::bigint, 1, 'claimed'::text),
             (current_setting('tiq_test.run')::uuid, 2, 1, 'failed')$$,
    'the run not written ahead is failed; the durable one is claimed'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.loss_count::integer, r.lease_holder, r.finished_at,
        r.failure_reason like 'interrupted:%'
      from ticketiq.runs as r where r.run_id = current_setting('tiq_test.run')::uuid$$,
    $$values ('failed'::text, 2::bigint, 1, null::text, '2030-01-01 00:00:10+00'::timestamptz, true)$$,
    'failed now, interrupted, loss counted, lease cleared'
);
select results_eq(
    $$select a.event, a.epoch, a.actor from ticketiq.audit as a
      where a.run_id = current_setting('tiq_test.run')::uuid and a.event <> 'agent.run.started'
      order by a.audit_id$$,
    $$values ('agent.run.lease_lapsed'::text, 2::bigint, 'leader'::text), ('agent.run.failed', 2, 'leader')$$,
    'lease_lapsed and agent.run.failed audited'
);
select results_eq(
    $$select t.kind, t.body ->> 'reason' = r.failure_reason
      from ticketiq.transcript_entries as t inner join ticketiq.runs as r on t.run_id = r.run_id
      where t.run_id = current_setting('tiq_test.run')::uuid$$,
    $$values ('failed'::text, true)$$,
    'the transcript is told the reason'
);
select results_eq(
    $$select e.state, e.outcome ->> 'reason' = r.failure_reason, e.finished_at
      from ticketiq.entries as e inner join ticketiq.runs as r on e.run_id = r.run_id
      where e.sender_id = 'task-1'$$,
    $$values ('failed'::text, true, '2030-01-01 00:00:10+00'::timestamptz)$$,
    'its entry is failed with the reason'
);
select is_empty(
    $$select 1 from ticketiq.adopt_run('p2', 8, current_setting('tiq_test.run')::uuid)$$,
    'it is never adopted'
);
select is(
    (select count(*) from ticketiq.entries_open), 0::bigint, 'the entry is no longer open'
);

select * from finish();
rollback;
