-- roles: ticketiq_operator reads the five operator views (approvals_waiting
-- and entries_open among them), and nothing else: no table
-- (approval_requests, entries and cron_schedules included), no API function
-- but now() and schema_version(); it cannot decide an approval nor write,
-- claim or read an entry through the API, nor count an attempt or audit.
begin;
select plan(69);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "unknown"}]');
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select tiq_test.checkpoint(tiq_test.rid(2), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.request_approval(tiq_test.rid(2), 1, 1, 'w1', '{"title": "close ticket"}');
select tiq_test.entry_run('task-1', 'p1', 8);
select tiq_test.new_entry('webhook', 'delivery-1');
select ticketiq.upsert_cron_schedule('nightly', 3600, '{}', 'o', 'ra');

select schema_privs_are('ticketiq', 'ticketiq_operator', array['USAGE']);
select table_privs_are('ticketiq', v.name, 'ticketiq_operator', array['SELECT'])
from unnest(array[
    'runs_in_flight', 'calls_in_doubt', 'resume_audit', 'approvals_waiting', 'entries_open', 'jobs_open'
]) as v (name);
select table_privs_are('ticketiq', t.name, 'ticketiq_operator', array[]::name[])
from unnest(array[
    'answers', 'approval_requests', 'audit', 'calls', 'checkpoints', 'config', 'cron_schedules', 'entries',
    'jobs', 'leader_leases', 'processes', 'runs', 'schema_migrations', 'transcript_entries', 'attempts',
    'audit_once_keys', 'workflow_timers', 'workflow_signals', 'first_waits', 'first_ends'
]) as t (name);

set local role ticketiq_operator;

select results_eq(
    $$select rf.run_id, rf.status, rf.lease_holder, rf.epoch from ticketiq.runs_in_flight as rf
      where rf.entry_point = 'playground' order by rf.run_id$$,
    $$values ('00000000-0000-0000-0000-000000000001'::uuid, 'running'::text, 'p2'::text, 3::bigint),
             ('00000000-0000-0000-0000-000000000002', 'running', 'p1', 1)$$,
    'operator reads runs_in_flight'
);
select lives_ok($$select * from ticketiq.calls_in_doubt$$, 'operator reads calls_in_doubt');
select results_eq(
    $$select v.epoch, v.step, v.loss_count from ticketiq.resume_audit as v$$,
    $$values (3::bigint, 1, 1)$$,
    'operator reads resume_audit'
);
select results_eq(
    $$select w.run_id, w.step, w.call_id, w.tool, w.summary from ticketiq.approvals_waiting as w$$,
    $$values ('00000000-0000-0000-0000-000000000002'::uuid, 1, 'w1'::text, 'tool_write'::text,
              '{"title": "close ticket"}'::jsonb)$$,
    'operator reads approvals_waiting'
);

select results_eq(
    $$select o.kind, o.sender_id, o.state, o.run_status, o.lease_holder from ticketiq.entries_open as o
      order by o.entry_id$$,
    $$values ('a2a'::text, 'task-1'::text, 'running'::text, 'running'::text, 'p1'::text),
             ('webhook', 'delivery-1', 'pending', null, null)$$,
    'operator reads entries_open: the pending entry and the one whose run is in flight'
);

select throws_ok(format('select * from ticketiq.%I', t.name), '42501', null, 'operator cannot read ' || t.name)
from unnest(array[
    'answers', 'approval_requests', 'audit', 'calls', 'checkpoints', 'config', 'cron_schedules', 'entries',
    'jobs', 'leader_leases', 'processes', 'runs', 'schema_migrations', 'transcript_entries', 'attempts',
    'audit_once_keys', 'workflow_timers', 'workflow_signals', 'first_waits', 'first_ends'
]) as t (name);

select throws_ok(
    $$delete from ticketiq.runs$$, '42501', null, 'operator cannot delete runs'
);
select throws_ok(
    $$select ticketiq.start_run('op', 'o', 'ra', 'web', 'ep', false, 8)$$, '42501', null,
    'operator cannot start a run'
);
select throws_ok(
    $$select ticketiq.request_stop('00000000-0000-0000-0000-000000000001', 'op')$$, '42501', null,
    'operator cannot call request_stop'
);
select throws_ok(
    $$select ticketiq.record_attempt('00000000-0000-0000-0000-000000000001', 3, 1, 'model', 'x')$$, '42501', null,
    'operator cannot count an attempt'
);
select throws_ok(
    $$select ticketiq.audit_once('00000000-0000-0000-0000-000000000001', 3, 'agent.run.x', 'k', '{}')$$,
    '42501', null, 'operator cannot audit'
);
select throws_ok(
    $$select ticketiq.sweep_lapsed('op')$$, '42501', null, 'operator cannot sweep'
);
select throws_ok(
    $$select ticketiq.decide_approval(
        (select w.approval_id from ticketiq.approvals_waiting as w), true, 'op'
    )$$,
    '42501', null, 'operator cannot call decide_approval'
);
select throws_ok(
    $$update ticketiq.approvals_waiting set summary = '{}'$$, '42501', null,
    'approvals_waiting is read-only for the operator'
);
select throws_ok(
    $$update ticketiq.runs_in_flight set lease_holder = 'op'$$,
    '42501',
    null,
    'the views are read-only for the operator'
);
select throws_ok(
    $$select ticketiq.accept_entry('webhook', 'delivery-2', '{}', 'o', 'ra', 'web')$$, '42501', null,
    'operator cannot write an entry'
);
select throws_ok(
    $$select ticketiq.claim_entries('op', 8)$$, '42501', null, 'operator cannot claim entries'
);
select throws_ok(
    $$select ticketiq.get_entry('webhook', 'delivery-1')$$, '42501', null, 'operator cannot call get_entry'
);
select throws_ok(
    $$select ticketiq.fire_due_crons()$$, '42501', null, 'operator cannot fire crons'
);
select throws_ok(
    $$select ticketiq.get_answer('00000000-0000-0000-0000-000000000001')$$, '42501', null,
    'operator cannot read a sealed answer and its seal'
);
select is(ticketiq.schema_version(), 26, 'operator calls schema_version()');

reset role;

select ok(
    has_function_privilege('ticketiq_operator', 'ticketiq.run_transcript(uuid)', 'execute'),
    'operator may read a run''s transcript'
);
select ok(
    has_function_privilege('ticketiq_operator', 'ticketiq.get_run(uuid)', 'execute'),
    'operator may read a run''s state'
);

select * from finish();
rollback;
