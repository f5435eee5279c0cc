-- schema: the API functions run as SECURITY DEFINER (ticketiq_app has no
-- table privilege, so every change goes through them); the internal helpers
-- and the trigger function do not.
begin;
select plan(64);

select is_definer('ticketiq', 'schema_version', array[]::name[]);
select is_definer('ticketiq', 'now', array[]::name[]);
select is_definer(
    'ticketiq', 'start_run',
    array[
        'text', 'text', 'text', 'text', 'text', 'boolean', 'double precision', 'jsonb', 'text', 'text',
        'jsonb', 'uuid', 'uuid', 'boolean'
    ]
);
select is_definer('ticketiq', 'write_checkpoint', array['uuid', 'bigint', 'integer', 'jsonb', 'text', 'text']);
select is_definer(
    'ticketiq', 'write_checkpoints', array['uuid[]', 'bigint[]', 'integer[]', 'jsonb', 'text[]', 'text[]']
);
select is_definer('ticketiq', 'mark_in_doubt', array['uuid', 'bigint', 'integer', 'text', 'text', 'text', 'text']);
select is_definer(
    'ticketiq', 'record_outcome', array['uuid', 'bigint', 'integer', 'text', 'jsonb', 'text', 'text', 'text']
);
select is_definer('ticketiq', 'renew_leases', array['text', 'uuid[]', 'bigint[]', 'double precision', 'text']);
select is_definer('ticketiq', 'claim_leader', array['text', 'text', 'double precision']);
select is_definer('ticketiq', 'renew_leader', array['text', 'text', 'bigint', 'double precision']);
select is_definer('ticketiq', 'resign_leader', array['text', 'text']);
select is_definer('ticketiq', 'sweep_lapsed', array['text', 'integer', 'integer']);
select is_definer('ticketiq', 'adopt_run', array['text', 'double precision', 'uuid']);
select is_definer('ticketiq', 'release_run', array['uuid', 'bigint', 'text', 'jsonb']);
select is_definer(
    'ticketiq', 'seal_answer', array['uuid', 'bigint', 'integer', 'jsonb', 'text', 'text', 'double precision']
);
select is_definer('ticketiq', 'hand_on_answer', array['uuid', 'bigint']);
select is_definer('ticketiq', 'fail_run', array['uuid', 'bigint', 'text', 'text']);
select is_definer('ticketiq', 'stop_run', array['uuid', 'bigint', 'text']);
select is_definer('ticketiq', 'request_stop', array['uuid', 'text', 'text']);
select is_definer('ticketiq', 'record_resume', array['uuid', 'bigint', 'jsonb']);
select is_definer('ticketiq', 'record_resumes', array['uuid[]', 'bigint[]', 'jsonb']);
select is_definer('ticketiq', 'register_process', array['text', 'text', 'integer']);
select is_definer('ticketiq', 'hold_liveness', array['text']);
select is_definer('ticketiq', 'release_liveness', array['text']);
select is_definer('ticketiq', 'watch_processes', array['text', 'text', 'text[]', 'integer', 'double precision']);
select is_definer('ticketiq', 'purge_answers', array['integer']);
select is_definer('ticketiq', 'purge_history', array['double precision', 'integer']);
select is_definer('ticketiq', 'request_approval', array['uuid', 'bigint', 'integer', 'text', 'jsonb']);
select is_definer('ticketiq', 'decide_approval', array['uuid', 'boolean', 'text', 'text']);
select is_definer('ticketiq', 'get_approval', array['uuid']);
select is_definer('ticketiq', 'delegation_status', array['text']);
select is_definer(
    'ticketiq', 'take_over_child', array['uuid', 'bigint', 'uuid', 'text', 'double precision', 'integer']
);
select is_definer(
    'ticketiq', 'accept_entry',
    array['text', 'text', 'jsonb', 'text', 'text', 'text', 'boolean', 'boolean', 'integer']
);
select is_definer(
    'ticketiq', 'claim_entries', array['text', 'double precision', 'integer', 'double precision', 'integer']
);
select is_definer('ticketiq', 'get_entry', array['text', 'text', 'text']);
select is_definer('ticketiq', 'get_entry_by_run', array['uuid']);
select is_definer('ticketiq', 'create_api_key', array['text', 'bytea', 'text', 'text[]', 'text[]']);
select is_definer('ticketiq', 'find_api_key', array['text']);
select is_definer('ticketiq', 'list_api_keys', array[]::name[]);
select is_definer('ticketiq', 'revoke_api_key', array['text']);
select is_definer('ticketiq', 'note_api_key_use', array['text']);
select is_definer('ticketiq', 'get_answer', array['uuid']);
select is_definer(
    'ticketiq', 'upsert_cron_schedule',
    array['text', 'double precision', 'jsonb', 'text', 'text', 'text', 'timestamp with time zone', 'boolean']
);
select is_definer('ticketiq', 'fire_due_crons', array['boolean', 'integer']);
select is_definer('ticketiq', 'suspend_run', array['uuid', 'bigint', 'text', 'jsonb']);
select is_definer('ticketiq', 'wake_runs', array['text']);
select is_definer('ticketiq', 'mark_delivery', array['uuid', 'bigint']);
select is_definer('ticketiq', 'get_run', array['uuid']);
select is_definer('ticketiq', 'run_transcript', array['uuid']);
select is_definer('ticketiq', 'record_attempt', array['uuid', 'bigint', 'integer', 'text', 'text']);
select is_definer('ticketiq', 'audit_once', array['uuid', 'bigint', 'text', 'text', 'jsonb']);

select isnt_definer('ticketiq', '_fence', array['text', 'uuid', 'bigint', 'timestamp with time zone']);
select isnt_definer('ticketiq', '_record_resume', array['uuid', 'bigint', 'jsonb', 'timestamp with time zone']);
select isnt_definer('ticketiq', '_lock_runs', array['uuid[]']);
select isnt_definer(
    'ticketiq', '_claim_lapsed', array['text', 'text', 'integer', 'integer', 'uuid', 'jsonb', 'text[]']
);
select isnt_definer('ticketiq', '_require_positive', array['text', 'double precision']);
select isnt_definer('ticketiq', '_require_text', array['text', 'text', 'integer', 'boolean', 'integer']);
select isnt_definer('ticketiq', '_require_bytes', array['text', 'text', 'integer']);
select isnt_definer('ticketiq', '_validate_checkpoint', array['jsonb']);
select isnt_definer('ticketiq', '_checkpoint_ok', array['jsonb']);
select isnt_definer(
    'ticketiq', '_step_calls',
    array['uuid[]', 'bigint[]', 'integer[]', 'jsonb', 'timestamp with time zone']
);
select isnt_definer('ticketiq', 'answers_write_once', array[]::name[]);
select isnt_definer('ticketiq', '_finish_entry', array['uuid', 'text', 'jsonb', 'timestamp with time zone']);
select isnt_definer('ticketiq', '_wake', array['text', 'timestamp with time zone', 'uuid']);

select * from finish();
rollback;
