-- roles: as ticketiq_app (no table privilege) a run's whole life goes
-- through the API functions: start, checkpoint, approval, mark, outcome,
-- failed attempts and once-only audits, renew, Stop, release, adopt, resume,
-- delegation and take-over of a child,
-- entries and cron fires, suspend and wake, seal, delivery mark, hand-on,
-- fail, leadership, sweep, the run views.
begin;
select plan(48);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
set local role ticketiq_app;

select lives_ok($$select ticketiq.register_process('app-1', 'host-a', 1)$$, 'register_process');
select lives_ok(
    $$select ticketiq.start_run('app-1', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, null, '{}',
        '00000000-0000-0000-0000-000000000001')$$,
    'start_run (run 1)'
);
select lives_ok(
    $$select ticketiq.start_run('app-1', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, null, '{}',
        ('00000000-0000-0000-0000-00000000000' || g)::uuid)
      from generate_series(2, 4) as g$$,
    'start_run (runs 2 to 4)'
);
select lives_ok(
    $$select ticketiq.write_checkpoint('00000000-0000-0000-0000-000000000001', 1, 1,
        '{"conversation": [], "calls": [{"call_id": "w1", "tool": "jira", "arguments": {},
          "classification": "write"}], "counters": {}, "history": [], "delegation_keys": {}}',
        'seal-1', 'k1')$$,
    'write_checkpoint'
);
select is(
    (
        select r.state
        from ticketiq.request_approval('00000000-0000-0000-0000-000000000001', 1, 1, 'w1', '{"title": "t"}') as r
    ),
    'waiting',
    'request_approval'
);
select is(
    (
        select d.state
        from ticketiq.decide_approval(
            (
                select r.approval_id
                from ticketiq.request_approval('00000000-0000-0000-0000-000000000001', 1, 1, 'w1') as r
            ),
            true, 'alice'
        ) as d
    ),
    'approved',
    'decide_approval'
);
select is(
    (
        select g.decided_by
        from ticketiq.get_approval(
            (
                select r.approval_id
                from ticketiq.request_approval('00000000-0000-0000-0000-000000000001', 1, 1, 'w1') as r
            )
        ) as g
    ),
    'alice',
    'get_approval'
);
select lives_ok(
    $$select ticketiq.mark_in_doubt('00000000-0000-0000-0000-000000000001', 1, 1, 'w1')$$, 'mark_in_doubt'
);
select lives_ok(
    $$select ticketiq.record_outcome('00000000-0000-0000-0000-000000000001', 1, 1, 'w1', '{"id": 1}')$$,
    'record_outcome'
);
select is(
    (
        select a.attempts
        from ticketiq.record_attempt('00000000-0000-0000-0000-000000000001', 1, 2, 'model', 'HTTP 503') as a
    ),
    1,
    'record_attempt'
);
select is(
    (
        select o.inserted
        from ticketiq.audit_once(
            '00000000-0000-0000-0000-000000000001', 1, 'agent.run.guarantee_downgraded', 'w1', '{}'
        ) as o
    ),
    true,
    'audit_once'
);
select lives_ok(
    $$select ticketiq.renew_leases('app-1', array['00000000-0000-0000-0000-000000000001']::uuid[],
        array[1]::bigint[], 8, 'run')$$,
    'renew_leases'
);
select lives_ok(
    $$select ticketiq.request_stop('00000000-0000-0000-0000-000000000002', 'alice')$$, 'request_stop'
);
select lives_ok($$select ticketiq.stop_run('00000000-0000-0000-0000-000000000002', 1)$$, 'stop_run');
select lives_ok($$select ticketiq.fail_run('00000000-0000-0000-0000-000000000003', 1, 'gate')$$, 'fail_run');
select lives_ok(
    $$select ticketiq.release_run('00000000-0000-0000-0000-000000000004', 1, 'SIGTERM')$$, 'release_run'
);
select is(
    (select a.run_id from ticketiq.adopt_run('app-2', 8) as a), '00000000-0000-0000-0000-000000000004'::uuid,
    'adopt_run'
);
select lives_ok(
    $$select ticketiq.record_resume('00000000-0000-0000-0000-000000000004', 3, '[]')$$, 'record_resume'
);
select lives_ok(
    $$select ticketiq.start_run('app-2', 'o', 'ra', 'delegation', 'ep', false, 2, '{}', null, 'deleg-1', '{}',
        '00000000-0000-0000-0000-000000000005', '00000000-0000-0000-0000-000000000004')$$,
    'start_run (run 5, the child of run 4)'
);
select is(
    (select d.run_id from ticketiq.delegation_status('deleg-1') as d), '00000000-0000-0000-0000-000000000005'::uuid,
    'delegation_status'
);
select set_config('ticketiq.fake_now', '2030-01-01 00:00:05+00', true);
select is(
    (
        select t.epoch
        from ticketiq.take_over_child(
            '00000000-0000-0000-0000-000000000004', 3, '00000000-0000-0000-0000-000000000005', 'app-2', 8
        ) as t
    ),
    3::bigint,
    'take_over_child'
);
select is(
    (select c.next_fire_at from ticketiq.upsert_cron_schedule('nightly', 3600, '{}', 'o', 'ra') as c),
    '2030-01-01 00:00:05+00'::timestamptz,
    'upsert_cron_schedule'
);
select is((select count(*) from ticketiq.fire_due_crons()), 1::bigint, 'fire_due_crons');
select is(
    (select a.created from ticketiq.accept_entry('a2a', 'task-1', '{}', 'o', 'ra', 'a2a', true) as a), true,
    'accept_entry'
);
select is((select count(*) from ticketiq.claim_entries('app-1', 8)), 2::bigint, 'claim_entries (cron and a2a)');
select is((select g.state from ticketiq.get_entry('a2a', 'task-1') as g), 'running', 'get_entry');
select is(
    (
        select s.status
        from ticketiq.suspend_run(
            (select g.run_id from ticketiq.get_entry('a2a', 'task-1') as g), 1, 'reply:conv-1'
        ) as s
    ),
    'suspended',
    'suspend_run'
);
select is(ticketiq.wake_runs('reply:conv-1'), 1, 'wake_runs');
select lives_ok(
    $$select ticketiq.seal_answer('00000000-0000-0000-0000-000000000001', 1, 2, '{"text": "ok"}', 'a', 'k1', 60)$$,
    'seal_answer'
);
select is(
    (select m.already_started from ticketiq.mark_delivery('00000000-0000-0000-0000-000000000001', 1) as m), false,
    'mark_delivery'
);
select is(
    (select h.body from ticketiq.hand_on_answer('00000000-0000-0000-0000-000000000001', 1) as h),
    '{"text": "ok"}'::jsonb,
    'hand_on_answer'
);
select is(
    (select g.status from ticketiq.get_run('00000000-0000-0000-0000-000000000001') as g), 'completed', 'get_run'
);
select is(
    (select count(*) from ticketiq.run_transcript('00000000-0000-0000-0000-000000000001')), 2::bigint,
    'run_transcript (its step and its answer)'
);
select is(ticketiq.purge_answers(), 0, 'purge_answers');
select is(
    (select c.is_leader from ticketiq.claim_leader('sweep', 'app-1', 10) as c), true, 'claim_leader'
);
select is(ticketiq.renew_leader('sweep', 'app-1', 1, 10), true, 'renew_leader');
select is(ticketiq.resign_leader('sweep', 'app-1'), true, 'resign_leader');
select is_empty($$select 1 from ticketiq.sweep_lapsed('app-1')$$, 'sweep_lapsed');
select is(ticketiq.schema_version(), 26, 'schema_version');
select throws_ok(
    $$select ticketiq._fence('run', '00000000-0000-0000-0000-000000000004', 2, '2030-01-01 00:00:00+00')$$,
    '42501', null, 'app cannot call the internal _fence'
);
select throws_ok(
    $$select ticketiq._validate_checkpoint('{}')$$, '42501', null, 'nor _validate_checkpoint'
);
select throws_ok(
    $$select ticketiq._require_positive('ttl', 1)$$, '42501', null, 'nor _require_positive'
);
select throws_ok(
    $$select ticketiq._wake('reply:conv-1', '2030-01-01 00:00:00+00')$$, '42501', null, 'nor _wake'
);
select throws_ok(
    $$select ticketiq._finish_entry('00000000-0000-0000-0000-000000000001', 'failed', '{}', '2030-01-01 00:00:00+00')$$,
    '42501', null, 'nor _finish_entry'
);
select throws_ok(
    $$update ticketiq.runs set epoch = 1$$, '42501', null,
    'but still no direct write'
);

reset role;
select results_eq(
    $$select r.run_id, r.status::text,
        r.epoch::bigint from ticketiq.runs as r where r.entry_point::text = 'ep' order by r.run_id$$,
    $$values (tiq_test.rid(1), 'completed'::text, 1::bigint), (tiq_test.rid(2), 'stopped', 1),
             (tiq_test.rid(3), 'failed', 1), (tiq_test.rid(4), 'running', 3), (tiq_test.rid(5), 'running', 3)$$,
    'the runs ended where the app drove them'
);
select results_eq(
    $$select a.event, a.run_id, a.epoch, a.detail ->> 'reason' from ticketiq.audit as a
      where a.event in ('agent.run.crash_resumed', 'agent.run.resumed') order by a.audit_id$$,
    $$values ('agent.run.resumed'::text, tiq_test.rid(4), 3::bigint, 'released'::text),
             ('agent.run.crash_resumed', tiq_test.rid(5), 3, 'lease_lapsed')$$,
    'the resume of the released run is audited, as a resume after a release, and the child''s, taken over'
);
select results_eq(
    $$select e.kind, e.state, r.status::text from ticketiq.entries as e
      inner join ticketiq.runs as r on e.run_id = r.run_id order by e.kind$$,
    $$values ('a2a'::text, 'running'::text, 'claimed'::text), ('cron', 'running', 'running')$$,
    'the entries'' runs: the a2a one woken, the cron one running'
);

select * from finish();
rollback;
