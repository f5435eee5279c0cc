-- write_checkpoint: a malformed body raises TQ004 and writes nothing, not
-- even the calls before the bad one (I15).
begin;
select plan(30);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

create function pg_temp.try_body(p_body jsonb) returns void
language sql
as $$
    select null::void from ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1, p_body, 'seal-1', 'k1');
$$;

select throws_ok($$select pg_temp.try_body('[]')$$, 'TQ004', null, 'body an array');
select throws_ok($$select pg_temp.try_body('"text"')$$, 'TQ004', null, 'body a string');
select throws_ok($$select pg_temp.try_body(null)$$, 'TQ004', null, 'body null');
select throws_ok($$select pg_temp.try_body(tiq_test.body() - 'conversation')$$, 'TQ004', null, 'no conversation');
select throws_ok($$select pg_temp.try_body(tiq_test.body() - 'calls')$$, 'TQ004', null, 'no calls');
select throws_ok($$select pg_temp.try_body(tiq_test.body() - 'counters')$$, 'TQ004', null, 'no counters');
select throws_ok($$select pg_temp.try_body(tiq_test.body() - 'history')$$, 'TQ004', null, 'no history');
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body() - 'delegation_keys')$$, 'TQ004', null, 'no delegation_keys'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body() || '{"conversation": {}}')$$, 'TQ004', null,
    'conversation an object'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body() || '{"calls": {}}')$$, 'TQ004', null, 'calls an object'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body() || '{"counters": []}')$$, 'TQ004', null, 'counters an array'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body() || '{"history": null}')$$, 'TQ004', null, 'history null'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body() || '{"delegation_keys": "k"}')$$, 'TQ004', null,
    'delegation_keys a string'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body() || '{"outcomes": []}')$$, 'TQ004', null,
    'outcomes present but not an object'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body('["c1"]'))$$, 'TQ004', null, 'a call that is not an object'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write') - 'call_id')))$$,
    'TQ004', null, 'a call without call_id'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('', 'write'))))$$,
    'TQ004', null, 'a call with an empty call_id'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write') || '{"call_id": 7}')))$$,
    'TQ004', null, 'a call_id that is not a string'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write') - 'classification')))$$,
    'TQ004', null, 'a call without classification'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'mutation'))))$$,
    'TQ004', null, 'an unknown classification'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(
        tiq_test.call('c1', 'read'), tiq_test.call('c1', 'write'))))$$,
    'TQ004', null, 'a duplicate call_id in one step'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write') || '{"arguments": []}')))$$,
    'TQ004', null, 'arguments an array, not an object'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write') - 'arguments')))$$,
    'TQ004', null, 'a call without arguments'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write') - 'tool')))$$,
    'TQ004', null, 'a call without tool'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write') || '{"step_key": 5}')))$$,
    'TQ004', null, 'a step_key that is neither a string nor null'
);
select throws_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(
        tiq_test.call('c1', 'read'), tiq_test.call('c2', 'write'), tiq_test.call('c3', 'nonsense'))))$$,
    'TQ004', null, 'valid calls followed by a bad one'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1, tiq_test.body(), '', 'k1')$$,
    'TQ004', null, 'an empty seal'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1, tiq_test.body(), 'seal-1', null)$$,
    'TQ004', null, 'a null seal key id'
);

select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'no checkpoint, no call and no step written by any malformed body (I15)'
);
select lives_ok(
    $$select pg_temp.try_body(tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write') - 'step_key'))
        || '{"outcomes": {}}')$$,
    'a call without step_key and an empty outcomes object are valid'
);

select * from finish();
rollback;
