-- schema: schema ticketiq has exactly the documented functions, with their
-- signatures (schema version 3: start_run takes p_durable as its 14th
-- argument; adopt_run and take_over_child return ticketiq.adopted_run; the
-- entry-point functions and the internal _finish_entry and _wake; schema
-- version 9: record_attempt and audit_once; schema version 10: the internal
-- _require_text; schema version 15: the workflow waits wait_run,
-- fire_due_timers and send_signal, and the internal _suspend they share
-- with suspend_run; schema version 18: the internal _require_bytes, _wake
-- with the run it may wake, record_trace_context with the owner;
-- mark_calls_in_doubt, the marks of a step's calls made at once; schema
-- version 19: run_events_after and the internal _step_event, a run's event stream;
-- schema version 21: the vendor limits set_vendor_limit, take_vendor_token,
-- give_vendor_token, slow_vendor and vendor_limit_figures; schema version 23:
-- list_runs, stop_runs, restart_run, fork_source and fork_run; schema version
-- 24: declare_workflows, unrunnable_runs and fail_unrunnable_runs; schema version
-- 25: suspend_for_vendor; the internal _vendor_bucket, the bucket read
-- take_vendor_token and suspend_for_vendor share, and _event_outcome, a
-- call_settled event's outcome, and _require_run_filters, the filters
-- list_runs and stop_runs share; schema version 26: await_first; the
-- internal _can_run_workflow, adopt_run's and unrunnable_runs' one rule;
-- the internal _adoptable and _adopt, the choice and the adoption adopt_run
-- and adopt_runs share, and _resume_opened, a resume audit row's event and
-- detail; record_resumes, the settlements of several resumes in one
-- statement, and the internal _record_resume it shares with record_resume;
-- the internal _lock_runs, the grouped statements' lock).
begin;
select plan(89);

select has_schema('ticketiq');
select functions_are(
    'ticketiq',
    array[
        '_claim_lapsed', '_fence', '_finish_entry', '_require_positive', '_require_text', '_require_bytes',
        '_require_kind',
        '_checkpoint_ok', '_step_calls', '_validate_checkpoint', '_wake', 'accept_entry',
        'adopt_run', 'adopt_runs', 'answers_write_once', 'claim_entries', 'claim_leader', 'decide_approval',
        'delegation_status', 'fail_run', 'fire_due_crons', 'get_answer', 'get_approval', 'get_entry', 'get_run',
        'hand_on_answer', 'mark_delivery', 'mark_in_doubt', 'mark_calls_in_doubt', 'now', 'purge_answers',
        'purge_history', 'record_outcome',
        'record_resume', 'register_process', 'release_run', 'renew_leader', 'renew_leases',
        'request_approval', 'request_stop', 'resign_leader', 'run_transcript', 'schema_version',
        'seal_answer', 'start_run', 'stop_run', 'suspend_run', 'sweep_lapsed', 'take_over_child',
        'upsert_cron_schedule', 'wake_runs', 'write_checkpoint', 'write_checkpoints', 'checkpoint_job',
        'claim_job',
        'enqueue_job', 'fail_job', 'finish_job', 'get_job', 'sweep_jobs',
        'hold_liveness', 'release_liveness', 'watch_processes', 'record_attempt', 'audit_once',
        'get_entry_by_run', 'create_api_key', 'find_api_key', 'list_api_keys', 'revoke_api_key',
        'note_api_key_use', 'audit_inspector_call', 'record_trace_context', 'run_trace_context', 'run_losses',
        'wait_run', 'fire_due_timers', 'send_signal', '_suspend', 'run_events_after', '_step_event',
        'set_vendor_limit', 'take_vendor_token', 'give_vendor_token', 'slow_vendor', 'vendor_limit_figures',
        'list_runs', 'stop_runs', 'restart_run', 'fork_source', 'fork_run',
        'declare_workflows', 'unrunnable_runs', 'fail_unrunnable_runs', 'suspend_for_vendor',
        '_vendor_bucket', '_event_outcome', '_require_run_filters',
        'await_first', '_can_run_workflow', '_adoptable', '_adopt', '_resume_opened',
        'record_resumes', '_record_resume', '_lock_runs'
    ],
    'ticketiq has the documented functions and no others'
);

select has_function('ticketiq', 'now', array[]::name[]);
select has_function('ticketiq', 'schema_version', array[]::name[]);
select has_function(
    'ticketiq', 'start_run',
    array[
        'text', 'text', 'text', 'text', 'text', 'boolean', 'double precision', 'jsonb', 'text', 'text',
        'jsonb', 'uuid', 'uuid', 'boolean'
    ]
);
select hasnt_function(
    'ticketiq', 'start_run',
    array[
        'text', 'text', 'text', 'text', 'text', 'boolean', 'double precision', 'jsonb', 'text', 'text',
        'jsonb', 'uuid', 'uuid'
    ],
    'the 13-argument start_run of schema version 2 is gone'
);
select hasnt_function(
    'ticketiq', 'start_run',
    array[
        'text', 'text', 'text', 'text', 'text', 'boolean', 'double precision', 'jsonb', 'text', 'text',
        'jsonb', 'uuid'
    ],
    'the 12-argument start_run of schema version 1 is gone'
);
select has_function(
    'ticketiq', 'write_checkpoint', array['uuid', 'bigint', 'integer', 'jsonb', 'text', 'text']
);
select has_function(
    'ticketiq', 'write_checkpoints', array['uuid[]', 'bigint[]', 'integer[]', 'jsonb', 'text[]', 'text[]']
);
select has_function('ticketiq', '_checkpoint_ok', array['jsonb']);
select has_function(
    'ticketiq', '_step_calls',
    array['uuid[]', 'bigint[]', 'integer[]', 'jsonb', 'timestamp with time zone']
);
select has_function('ticketiq', 'mark_in_doubt', array['uuid', 'bigint', 'integer', 'text', 'text', 'text', 'text']);
select has_function(
    'ticketiq', 'record_outcome', array['uuid', 'bigint', 'integer', 'text', 'jsonb', 'text', 'text', 'text']
);
select has_function('ticketiq', 'renew_leases', array['text', 'uuid[]', 'bigint[]', 'double precision', 'text']);
select has_function('ticketiq', 'claim_leader', array['text', 'text', 'double precision']);
select has_function('ticketiq', 'renew_leader', array['text', 'text', 'bigint', 'double precision']);
select has_function('ticketiq', 'resign_leader', array['text', 'text']);
select has_function('ticketiq', 'sweep_lapsed', array['text', 'integer', 'integer']);
select has_function('ticketiq', 'adopt_run', array['text', 'double precision', 'uuid']);
select has_function('ticketiq', 'release_run', array['uuid', 'bigint', 'text', 'jsonb']);
select has_function(
    'ticketiq', 'seal_answer',
    array['uuid', 'bigint', 'integer', 'jsonb', 'text', 'text', 'double precision']
);
select has_function('ticketiq', 'hand_on_answer', array['uuid', 'bigint']);
select has_function('ticketiq', 'fail_run', array['uuid', 'bigint', 'text', 'text']);
select has_function('ticketiq', 'stop_run', array['uuid', 'bigint', 'text']);
select has_function('ticketiq', 'request_stop', array['uuid', 'text', 'text']);
select has_function('ticketiq', 'record_resume', array['uuid', 'bigint', 'jsonb']);
select has_function('ticketiq', 'record_resumes', array['uuid[]', 'bigint[]', 'jsonb']);
select has_function('ticketiq', 'register_process', array['text', 'text', 'integer']);
select has_function('ticketiq', 'hold_liveness', array['text']);
select has_function('ticketiq', 'release_liveness', array['text']);
select has_function('ticketiq', 'watch_processes', array['text', 'text', 'text[]', 'integer', 'double precision']);
select has_function('ticketiq', 'purge_answers', array['integer']);
select has_function('ticketiq', 'purge_history', array['double precision', 'integer']);
select has_function('ticketiq', 'request_approval', array['uuid', 'bigint', 'integer', 'text', 'jsonb']);
select has_function('ticketiq', 'decide_approval', array['uuid', 'boolean', 'text', 'text']);
select has_function('ticketiq', 'get_approval', array['uuid']);
select has_function('ticketiq', 'delegation_status', array['text']);
select has_function(
    'ticketiq', 'take_over_child', array['uuid', 'bigint', 'uuid', 'text', 'double precision', 'integer']
);
select function_returns(
    'ticketiq', 'adopt_run', array['text', 'double precision', 'uuid'], 'setof ticketiq.adopted_run'
);
select function_returns(
    'ticketiq', 'take_over_child', array['uuid', 'bigint', 'uuid', 'text', 'double precision', 'integer'],
    'setof ticketiq.adopted_run'
);
select has_function('ticketiq', '_fence', array['text', 'uuid', 'bigint', 'timestamp with time zone']);
select has_function('ticketiq', '_require_positive', array['text', 'double precision']);
select has_function('ticketiq', '_require_text', array['text', 'text', 'integer', 'boolean', 'integer']);
select has_function('ticketiq', '_require_bytes', array['text', 'text', 'integer']);
select has_function('ticketiq', '_require_kind', array['text']);
select has_function('ticketiq', '_event_outcome', array['jsonb']);
select has_function(
    'ticketiq', '_require_run_filters',
    array['text', 'text', 'text', 'text[]', 'boolean', 'timestamp with time zone[]', 'integer', 'integer']
);
select has_function(
    'ticketiq', '_vendor_bucket', array['ticketiq.vendor_limits', 'text', 'timestamp with time zone']
);
select has_function('ticketiq', '_validate_checkpoint', array['jsonb']);
select has_function('ticketiq', 'answers_write_once', array[]::name[]);
select has_function(
    'ticketiq', 'accept_entry',
    array['text', 'text', 'jsonb', 'text', 'text', 'text', 'boolean', 'boolean', 'integer']
);
select has_function(
    'ticketiq', 'claim_entries', array['text', 'double precision', 'integer', 'double precision', 'integer']
);
select has_function('ticketiq', 'get_entry', array['text', 'text', 'text']);
select has_function('ticketiq', 'get_entry_by_run', array['uuid']);
select has_function('ticketiq', 'create_api_key', array['text', 'bytea', 'text', 'text[]', 'text[]']);
select has_function('ticketiq', 'find_api_key', array['text']);
select has_function('ticketiq', 'list_api_keys', array[]::name[]);
select has_function('ticketiq', 'revoke_api_key', array['text']);
select has_function('ticketiq', 'note_api_key_use', array['text']);
select has_function('ticketiq', 'get_answer', array['uuid']);
select has_function(
    'ticketiq', 'upsert_cron_schedule',
    array['text', 'double precision', 'jsonb', 'text', 'text', 'text', 'timestamp with time zone', 'boolean']
);
select has_function('ticketiq', 'fire_due_crons', array['boolean', 'integer']);
select has_function('ticketiq', 'suspend_run', array['uuid', 'bigint', 'text', 'jsonb']);
select has_function('ticketiq', 'await_first', array['uuid', 'bigint', 'text', 'uuid[]', 'jsonb']);
select has_function('ticketiq', 'wake_runs', array['text']);
select has_function('ticketiq', 'mark_delivery', array['uuid', 'bigint']);
select has_function('ticketiq', 'get_run', array['uuid']);
select has_function('ticketiq', 'run_transcript', array['uuid']);
select has_function('ticketiq', 'run_events_after', array['uuid', 'bigint', 'integer']);
select has_function('ticketiq', '_step_event', array['jsonb']);
select has_function(
    'ticketiq', 'set_vendor_limit', array['text', 'double precision', 'integer', 'integer', 'text', 'text']
);
select has_function('ticketiq', 'take_vendor_token', array['text', 'uuid', 'bigint', 'text', 'text']);
select has_function('ticketiq', 'give_vendor_token', array['uuid', 'text']);
select has_function('ticketiq', 'slow_vendor', array['text', 'text', 'double precision']);
select has_function('ticketiq', 'vendor_limit_figures', array[]::name[]);
select has_function('ticketiq', 'suspend_for_vendor', array['text', 'uuid', 'bigint', 'text', 'text']);
select has_function('ticketiq', '_finish_entry', array['uuid', 'text', 'jsonb', 'timestamp with time zone']);
select has_function('ticketiq', '_wake', array['text', 'timestamp with time zone', 'uuid']);
select function_returns('ticketiq', 'wake_runs', array['text'], 'integer');
select has_function('ticketiq', 'record_attempt', array['uuid', 'bigint', 'integer', 'text', 'text']);
select has_function('ticketiq', 'audit_once', array['uuid', 'bigint', 'text', 'text', 'jsonb']);

select has_function(
    'ticketiq', 'list_runs',
    array[
        'text', 'text[]', 'text', 'text', 'timestamp with time zone', 'timestamp with time zone',
        'timestamp with time zone', 'timestamp with time zone', 'text', 'timestamp with time zone', 'uuid',
        'integer'
    ]
);
select has_function(
    'ticketiq', 'stop_runs',
    array[
        'text', 'text', 'text', 'text[]', 'text', 'text', 'timestamp with time zone',
        'timestamp with time zone', 'integer'
    ]
);
select has_function('ticketiq', 'restart_run', array['uuid', 'text', 'text']);
select has_function('ticketiq', 'fork_source', array['uuid', 'integer']);
select has_function(
    'ticketiq', 'fork_run', array['uuid', 'integer', 'uuid', 'text', 'text', 'jsonb', 'text', 'jsonb', 'text']
);
select has_function('ticketiq', 'declare_workflows', array['text', 'jsonb']);
select has_function('ticketiq', 'unrunnable_runs', array['integer', 'text']);
select has_function('ticketiq', 'fail_unrunnable_runs', array['text', 'double precision', 'integer']);

select * from finish();
rollback;
