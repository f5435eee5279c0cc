-- roles: ticketiq_app holds USAGE on the schema, EXECUTE on the API
-- functions (the entry-point functions of version 3 among them), nothing on
-- the internal functions (_finish_entry and _wake among them) and no table
-- privilege; schema 23's list_runs, stop_runs, restart_run, fork_source and fork_run.
begin;
select plan(89);

select schema_privs_are('ticketiq', 'ticketiq_app', array['USAGE']);

select table_privs_are('ticketiq', t.name, 'ticketiq_app', array[]::name[])
from unnest(array[
    'answers', 'approval_requests', 'audit', 'calls', 'checkpoints', 'config', 'cron_schedules', 'entries',
    'leader_leases', 'processes', 'runs', 'schema_migrations', 'transcript_entries', 'attempts', 'audit_once_keys',
    'api_keys', 'workflow_timers', 'workflow_signals'
]) as t (name);

select function_privs_are('ticketiq', f.name, f.args, 'ticketiq_app', array['EXECUTE'])
from (values
    ('now', array[]::name[]),
    ('schema_version', array[]::name[]),
    (
        'start_run',
        array[
            'text', 'text', 'text', 'text', 'text', 'boolean', 'double precision', 'jsonb', 'text', 'text',
            'jsonb', 'uuid', 'uuid', 'boolean'
        ]::name[]
    ),
    ('write_checkpoint', array['uuid', 'bigint', 'integer', 'jsonb', 'text', 'text']::name[]),
    (
        'write_checkpoints',
        array['uuid[]', 'bigint[]', 'integer[]', 'jsonb', 'text[]', 'text[]']::name[]
    ),
    ('mark_in_doubt', array['uuid', 'bigint', 'integer', 'text', 'text', 'text', 'text']::name[]),
    ('record_outcome', array['uuid', 'bigint', 'integer', 'text', 'jsonb', 'text', 'text', 'text']::name[]),
    ('renew_leases', array['text', 'uuid[]', 'bigint[]', 'double precision', 'text']::name[]),
    ('claim_leader', array['text', 'text', 'double precision']::name[]),
    ('renew_leader', array['text', 'text', 'bigint', 'double precision']::name[]),
    ('resign_leader', array['text', 'text']::name[]),
    ('sweep_lapsed', array['text', 'integer', 'integer']::name[]),
    ('adopt_run', array['text', 'double precision', 'uuid']::name[]),
    ('release_run', array['uuid', 'bigint', 'text', 'jsonb']::name[]),
    ('seal_answer', array['uuid', 'bigint', 'integer', 'jsonb', 'text', 'text', 'double precision']::name[]),
    ('hand_on_answer', array['uuid', 'bigint']::name[]),
    ('fail_run', array['uuid', 'bigint', 'text', 'text']::name[]),
    ('stop_run', array['uuid', 'bigint', 'text']::name[]),
    ('request_stop', array['uuid', 'text', 'text']::name[]),
    ('record_resume', array['uuid', 'bigint', 'jsonb']::name[]),
    ('register_process', array['text', 'text', 'integer']::name[]),
    ('hold_liveness', array['text']::name[]),
    ('release_liveness', array['text']::name[]),
    ('watch_processes', array['text', 'text', 'text[]', 'integer', 'double precision']::name[]),
    ('purge_answers', array['integer']::name[]),
    ('purge_history', array['double precision', 'integer']::name[]),
    ('request_approval', array['uuid', 'bigint', 'integer', 'text', 'jsonb']::name[]),
    ('decide_approval', array['uuid', 'boolean', 'text', 'text']::name[]),
    ('get_approval', array['uuid']::name[]),
    ('delegation_status', array['text']::name[]),
    ('take_over_child', array['uuid', 'bigint', 'uuid', 'text', 'double precision', 'integer']::name[]),
    ('suspend_run', array['uuid', 'bigint', 'text', 'jsonb']::name[]),
    ('wake_runs', array['text']::name[]),
    (
        'accept_entry',
        array['text', 'text', 'jsonb', 'text', 'text', 'text', 'boolean', 'boolean', 'integer']::name[]
    ),
    (
        'claim_entries',
        array['text', 'double precision', 'integer', 'double precision', 'integer']::name[]
    ),
    ('get_entry', array['text', 'text', 'text']::name[]),
    ('get_entry_by_run', array['uuid']::name[]),
    ('create_api_key', array['text', 'bytea', 'text', 'text[]', 'text[]']::name[]),
    ('find_api_key', array['text']::name[]),
    ('list_api_keys', array[]::name[]),
    ('revoke_api_key', array['text']::name[]),
    ('note_api_key_use', array['text']::name[]),
    ('get_answer', array['uuid']::name[]),
    (
        'upsert_cron_schedule',
        array[
            'text', 'double precision', 'jsonb', 'text', 'text', 'text', 'timestamp with time zone', 'boolean'
        ]::name[]
    ),
    ('fire_due_crons', array['boolean', 'integer']::name[]),
    ('wait_run', array['uuid', 'bigint', 'text', 'text', 'double precision', 'jsonb']::name[]),
    ('fire_due_timers', array['integer']::name[]),
    ('send_signal', array['uuid', 'text', 'jsonb', 'text', 'text']::name[]),
    ('mark_delivery', array['uuid', 'bigint']::name[]),
    ('get_run', array['uuid']::name[]),
    ('run_transcript', array['uuid']::name[]),
    ('record_attempt', array['uuid', 'bigint', 'integer', 'text', 'text']::name[]),
    ('audit_once', array['uuid', 'bigint', 'text', 'text', 'jsonb']::name[]),
    (
        'list_runs',
        array[
            'text', 'text[]', 'text', 'text', 'timestamp with time zone', 'timestamp with time zone',
            'timestamp with time zone', 'timestamp with time zone', 'text', 'timestamp with time zone', 'uuid',
            'integer'
        ]::name[]
    ),
    (
        'stop_runs',
        array[
            'text', 'text', 'text', 'text[]', 'text', 'text', 'timestamp with time zone',
            'timestamp with time zone', 'integer'
        ]::name[]
    ),
    ('restart_run', array['uuid', 'text', 'text']::name[]),
    ('fork_source', array['uuid', 'integer']::name[]),
    ('fork_run', array['uuid', 'integer', 'uuid', 'text', 'text', 'jsonb', 'text', 'jsonb', 'text']::name[])
) as f (name, args);

select function_privs_are('ticketiq', f.name, f.args, 'ticketiq_app', array[]::name[])
from (values
    ('_fence', array['text', 'uuid', 'bigint', 'timestamp with time zone']::name[]),
    ('_require_positive', array['text', 'double precision']::name[]),
    ('_require_text', array['text', 'text', 'integer', 'boolean', 'integer']::name[]),
    ('_require_bytes', array['text', 'text', 'integer']::name[]),
    ('_validate_checkpoint', array['jsonb']::name[]),
    ('_checkpoint_ok', array['jsonb']::name[]),
    (
        '_step_calls',
        array['uuid[]', 'bigint[]', 'integer[]', 'jsonb', 'timestamp with time zone']::name[]
    ),
    ('answers_write_once', array[]::name[]),
    ('_finish_entry', array['uuid', 'text', 'jsonb', 'timestamp with time zone']::name[]),
    ('_wake', array['text', 'timestamp with time zone', 'uuid']::name[]),
    ('_suspend', array['ticketiq.runs', 'text', 'text', 'jsonb', 'timestamp with time zone']::name[]),
    ('_claim_lapsed', array['text', 'text', 'integer', 'integer', 'uuid', 'jsonb', 'text[]']::name[])
) as f (name, args);

select * from finish();
rollback;
