-- schema: schema ticketiq has exactly the documented functions, with their
-- signatures (schema version 2: start_run takes p_parent_run_id; adopt_run
-- and take_over_child return ticketiq.adopted_run).
begin;
select plan(35);

select has_schema('ticketiq');
select functions_are(
    'ticketiq',
    array[
        '_fence', '_require_positive', '_validate_checkpoint', 'adopt_run', 'answers_write_once',
        'claim_leader', 'decide_approval', 'delegation_status', 'fail_run', 'get_approval',
        'hand_on_answer', 'mark_in_doubt', 'now', 'purge_answers', 'record_outcome', 'record_resume',
        'register_process', 'release_run', 'renew_leader', 'renew_leases', 'request_approval',
        'request_stop', 'resign_leader', 'schema_version', 'seal_answer', 'start_run', 'stop_run',
        'sweep_lapsed', 'take_over_child', 'write_checkpoint'
    ],
    'ticketiq has the documented functions and no others'
);

select has_function('ticketiq', 'now', array[]::name[]);
select has_function('ticketiq', 'schema_version', array[]::name[]);
select has_function(
    'ticketiq', 'start_run',
    array[
        'text', 'text', 'text', 'text', 'text', 'boolean', 'double precision', 'jsonb', 'text', 'text',
        'jsonb', 'uuid', 'uuid'
    ]
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
select has_function('ticketiq', 'mark_in_doubt', array['uuid', 'bigint', 'integer', 'text', 'text']);
select has_function(
    'ticketiq', 'record_outcome', array['uuid', 'bigint', 'integer', 'text', 'jsonb', 'text']
);
select has_function('ticketiq', 'renew_leases', array['text', 'uuid[]', 'bigint[]', 'double precision']);
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
select has_function('ticketiq', 'register_process', array['text', 'text', 'integer']);
select has_function('ticketiq', 'purge_answers', array['integer']);
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
select has_function('ticketiq', '_fence', array['uuid', 'bigint', 'timestamp with time zone']);
select has_function('ticketiq', '_require_positive', array['text', 'double precision']);
select has_function('ticketiq', '_validate_checkpoint', array['jsonb']);
select has_function('ticketiq', 'answers_write_once', array[]::name[]);

select * from finish();
rollback;
