-- schema: the tables, operator views and the adopted_run type exist, and
-- schema_version() is 5 with the five migrations recorded (5 leaves room for
-- HOT updates of runs: fillfactor 80; 4 adds the table jobs and the view
-- jobs_open).  Version 3 adds
-- the tables entries and cron_schedules, the view entries_open, the columns
-- runs.durable, runs.wait_key, runs.claim_reason and
-- answers.delivery_started_at, the run status 'suspended', and no attribute
-- to ticketiq.adopted_run.  Version 9 adds the tables attempts and
-- audit_once_keys, each keyed as its function needs and going with its run;
-- version 10 (hardening) adds only an index; 11 (front_auth) the table
-- api_keys; 12 (chained_seals) the seals of the call rows; 13 (front_owners)
-- entries keyed by owner and api_keys.last_used_at; 14 (trace_context) the
-- table trace_contexts; 15 (workflows) the tables
-- workflow_timers and workflow_signals; 16 (resume_audit_lookup) only an index;
-- 17 (one_lease_machine) only functions' signatures; 18 (owner_keys_and_limits)
-- trace_contexts.owner, an index and the columns' declared text limits; 19
-- (run_events) the table run_events, a run's event stream; 21 (vendor_limits)
-- the tables vendor_limits, vendor_buckets and vendor_calls; 22 (fair_shares)
-- entries.priority and an index; 23 (operating_runs) only the two keyset
-- indexes of list_runs; 24 (workflow_versions) the table workflow_versions
-- and processes.workflows; 25 (vendor_turns) the table vendor_turns and
-- vendor_buckets.granted_at and suspended; 26 (first_of) the tables
-- first_waits and first_ends (ctx.first).
begin;
select plan(29);

select tables_are(
    'ticketiq',
    array[
        'schema_migrations', 'config', 'processes', 'runs', 'checkpoints', 'calls', 'answers',
        'transcript_entries', 'audit', 'leader_leases', 'approval_requests', 'entries', 'cron_schedules',
        'jobs', 'attempts', 'audit_once_keys', 'api_keys', 'trace_contexts', 'workflow_timers',
        'workflow_signals', 'run_events', 'vendor_limits', 'vendor_buckets', 'vendor_calls',
        'workflow_versions', 'vendor_turns', 'first_waits', 'first_ends'
    ]
);
select views_are(
    'ticketiq', array[
        'runs_in_flight', 'calls_in_doubt', 'resume_audit', 'approvals_waiting', 'entries_open', 'jobs_open'
    ]
);
select is(ticketiq.schema_version(), 26, 'schema_version() is 26');
select results_eq(
    $$select m.version, m.name from ticketiq.schema_migrations as m order by m.version$$,
    $$values (1, 'core'::text), (2, 'approvals_delegation'), (3, 'entry_points'), (4, 'jobs'), (5, 'fast_steps'),
        (6, 'liveness'), (7, 'group_commit'), (8, 'lean_steps'), (9, 'failures'), (10, 'hardening'),
        (11, 'front_auth'), (12, 'chained_seals'), (13, 'front_owners'), (14, 'trace_context'),
        (15, 'workflows'), (16, 'resume_audit_lookup'), (17, 'one_lease_machine'),
        (18, 'owner_keys_and_limits'), (19, 'run_events'), (21, 'vendor_limits'),
        (22, 'fair_shares'), (23, 'operating_runs'), (24, 'workflow_versions'), (25, 'vendor_turns'),
        (26, 'first_of')$$,
    'migrations 1 to 19 and 21 to 26 are recorded'
);
select is(
    (select c.reloptions from pg_catalog.pg_class as c where c.oid = 'ticketiq.runs'::regclass),
    array['fillfactor=80'],
    'runs has fillfactor 80 (migration 5), room for HOT updates'
);
select results_eq(
    $$select c.id, c.fake_clock_allowed from ticketiq.config as c$$,
    $$values (true, false)$$,
    'one config row; the fake clock is off'
);
select throws_ok(
    $$insert into ticketiq.config (id) values (false)$$,
    '23514', null, 'config has one row only'
);
select isnt(obj_description('ticketiq.runs_in_flight'::regclass, 'pg_class'), null, 'runs_in_flight has a comment');
select isnt(
    obj_description('ticketiq.approvals_waiting'::regclass, 'pg_class'), null, 'approvals_waiting has a comment'
);
select has_type('ticketiq', 'adopted_run', 'the composite type ticketiq.adopted_run exists');
select has_column('ticketiq', 'calls', 'approval_id', 'calls.approval_id records a held call''s request');
select has_column('ticketiq', 'runs', 'parent_run_id', 'runs.parent_run_id records a delegation''s parent');
select isnt(
    obj_description('ticketiq.entries_open'::regclass, 'pg_class'), null, 'entries_open has a comment'
);
select is(
    (
        select array_agg(a.attname::text order by a.attnum)
        from pg_attribute as a
        where a.attrelid = (select t.typrelid from pg_type as t where t.oid = 'ticketiq.adopted_run'::regtype)
            and a.attnum > 0 and not a.attisdropped
    ),
    array[
        'run_id', 'epoch', 'lease_expires_at', 'loss_count', 'last_step', 'owner', 'run_as', 'channel',
        'entry_point', 'may_wait', 'correlation_id', 'input', 'meta', 'stop_requested', 'checkpoint_body',
        'checkpoint_seal', 'checkpoint_seal_key_id', 'calls', 'answer_body', 'answer_seal', 'answer_seal_key_id',
        'answer_handed_on', 'checkpoint_chain'
    ],
    'ticketiq.adopted_run: the last checkpoint, its calls, a sealed answer and the chain (schema 12)'
);
select col_type_is('ticketiq', 'runs', 'durable', 'boolean', 'runs.durable is boolean');
select col_not_null('ticketiq', 'runs', 'durable', 'runs.durable is not null');
select col_default_is('ticketiq', 'runs', 'durable', 'true', 'runs.durable defaults to true');
select has_column('ticketiq', 'runs', 'wait_key', 'runs.wait_key names what a suspended run waits for');
select has_column('ticketiq', 'runs', 'claim_reason', 'runs.claim_reason says why a run is up for adoption');
select col_type_is(
    'ticketiq', 'answers', 'delivery_started_at', 'timestamp with time zone',
    'answers.delivery_started_at marks a delivery about to be sent'
);
select col_is_unique(
    'ticketiq', 'entries', array['kind', 'owner', 'sender_id'], 'an entry is unique by kind, owner and sender id'
);
select has_column('ticketiq', 'api_keys', 'last_used_at', 'api_keys.last_used_at: when a key last verified a request');
select col_is_pk('ticketiq', 'cron_schedules', 'name', 'a schedule is keyed by its name');
select col_is_pk(
    'ticketiq', 'attempts', array['run_id', 'step', 'target'], 'attempts are counted per run, step and target'
);
select col_is_pk(
    'ticketiq', 'audit_once_keys', array['run_id', 'event', 'key'], 'an audit_once key is written once per run'
);
select results_eq(
    $$select c.conrelid::regclass::text, c.confdeltype::text
      from pg_catalog.pg_constraint as c
      where c.contype = 'f' and c.conrelid in ('ticketiq.attempts'::regclass, 'ticketiq.audit_once_keys'::regclass)
      order by 1$$,
    $$values ('ticketiq.attempts'::text, 'c'::text), ('ticketiq.audit_once_keys', 'c')$$,
    'attempts and audit_once keys reference their run on delete cascade'
);
select col_not_null('ticketiq', 'attempts', 'last_error', 'an attempt keeps its last error');
select col_type_is('ticketiq', 'attempts', 'last_at', 'timestamp with time zone', 'attempts.last_at is a time');
select throws_ok(
    $$insert into ticketiq.runs (
        run_id, owner, run_as, channel, entry_point, correlation_id, status, created_at, updated_at
    ) values (tiq_test.rid(1), 'o', 'ra', 'web', 'ep', 'c', 'suspended', now(), now())$$,
    '23514', null, 'a suspended run must name its wait key'
);

select * from finish();
rollback;
