-- _validate_checkpoint: the calls are checked in one set-based query; the
-- TQ004 message names the first bad call by its index and what is wrong
-- with it; a call_id used twice in one step is refused as well.
begin;
select plan(11);

create function pg_temp.calls(p_calls jsonb) returns void
language sql
as $$
    select ticketiq._validate_checkpoint(tiq_test.body(p_calls));
$$;

select throws_ok(
    $$select pg_temp.calls('[{"call_id": "c0", "tool": "t", "arguments": {}, "classification": "read"}, 7]')$$,
    'TQ004', 'checkpoint.calls[1] must be an object', 'a call that is not an object'
);
select throws_ok(
    $$select pg_temp.calls('[null]')$$,
    'TQ004', 'checkpoint.calls[0] must be an object', 'a JSON null call'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(tiq_test.call('c1', 'write') || '{"call_id": 7}'))$$,
    'TQ004', 'checkpoint.calls[0].call_id must be a non-empty string', 'a call_id that is not a string'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(tiq_test.call('c1', 'read'), tiq_test.call('', 'write')))$$,
    'TQ004', 'checkpoint.calls[1].call_id must be a non-empty string', 'an empty call_id'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(tiq_test.call('c1', 'write') || '{"tool": ""}'))$$,
    'TQ004', 'checkpoint.calls[0].tool must be a non-empty string', 'an empty tool'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(tiq_test.call('c1', 'write') - 'arguments'))$$,
    'TQ004', 'checkpoint.calls[0].arguments must be an object', 'no arguments'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(tiq_test.call('c1', 'write') - 'classification'))$$,
    'TQ004', 'checkpoint.calls[0].classification must be one of read, write, delegation, remote_agent, '
    || 'subagent_with_tools',
    'no classification'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(tiq_test.call('c1', 'read'), tiq_test.call('c2', 'mutation')))$$,
    'TQ004', 'checkpoint.calls[1].classification must be one of read, write, delegation, remote_agent, '
    || 'subagent_with_tools',
    'an unknown classification'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(tiq_test.call('c1', 'write') || '{"step_key": 5}'))$$,
    'TQ004', 'checkpoint.calls[0].step_key must be a string or null', 'a step_key that is a number'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(
        tiq_test.call('c1', 'read'), tiq_test.call('c2', 'write') - 'tool', tiq_test.call('c3', 'nonsense')))$$,
    'TQ004', 'checkpoint.calls[1].tool must be a non-empty string', 'the first bad call is named'
);
select throws_ok(
    $$select pg_temp.calls(jsonb_build_array(
        tiq_test.call('c1', 'read'), tiq_test.call('c2', 'write'), tiq_test.call('c1', 'write')))$$,
    'TQ004', 'checkpoint.calls: a call_id appears twice in one step', 'a call_id used twice in one step'
);

select * from finish();
rollback;
