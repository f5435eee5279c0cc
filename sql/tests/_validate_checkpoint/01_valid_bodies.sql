-- _validate_checkpoint: accepts every documented shape (optional outcomes,
-- step_key string, null or absent, extra fields) and raises TQ004 naming
-- what is wrong otherwise (the cases are in write_checkpoint/04).
begin;
select plan(7);

select lives_ok($$select ticketiq._validate_checkpoint(tiq_test.body())$$, 'a body with no calls');
select lives_ok(
    $$select ticketiq._validate_checkpoint(tiq_test.body(jsonb_build_array(
        tiq_test.call('c1', 'read'), tiq_test.call('c2', 'write', 'k'), tiq_test.call('c3', 'delegation'),
        tiq_test.call('c4', 'remote_agent'), tiq_test.call('c5', 'subagent_with_tools'),
        tiq_test.call('c6', 'write') - 'step_key')))$$,
    'every classification, step_key string, null or absent'
);
select lives_ok(
    $$select ticketiq._validate_checkpoint(tiq_test.body() || '{"outcomes": {"c0": {"ok": true}}, "model": "m1"}')$$,
    'outcomes as an object and extra fields'
);
select throws_ok(
    $$select ticketiq._validate_checkpoint(tiq_test.body() - 'history')$$,
    'TQ004', 'checkpoint.history must be an array', 'the error names the missing field'
);
select throws_ok(
    $$select ticketiq._validate_checkpoint(tiq_test.body(jsonb_build_array(
        tiq_test.call('c1', 'read'), tiq_test.call('c2', 'write') - 'tool')))$$,
    'TQ004', 'checkpoint.calls[1].tool must be a non-empty string', 'and the index of the bad call'
);
select throws_ok(
    $$select ticketiq._validate_checkpoint(tiq_test.body(jsonb_build_array(
        tiq_test.call('c1', 'read') || '{"classification": ["write"]}')))$$,
    'TQ004', null, 'a classification that is not a string'
);
select throws_ok(
    $$select ticketiq._validate_checkpoint(tiq_test.body(jsonb_build_array(
        tiq_test.call('c1', 'read') || '{"tool": ""}')))$$,
    'TQ004', null, 'an empty tool'
);

select * from finish();
rollback;
