-- _checkpoint_ok: true exactly for the bodies _validate_checkpoint accepts,
-- over every documented shape and a mutation of each field of the body and
-- of its calls (missing, null, of each other JSON type, empty, too long);
-- never raises.
begin;
select plan(5);

create function pg_temp.refused(p_body jsonb)
returns boolean
language plpgsql
as $$
begin
    perform ticketiq._validate_checkpoint(p_body);
    return false;
exception when sqlstate 'TQ004' then
    return true;
end;
$$;

create temp table odd (value jsonb) on commit drop;
insert into odd values
(null), ('null'), ('0'), ('1.5'), ('""'), ('"x"'), ('[]'), ('["a"]'), ('{}'), ('{"a": 1}'),
('true'), ('"read"'), ('"write"'), ('[""]'),
-- strings at and past the call_id limit (256 characters), in lines too
(to_jsonb(repeat('x', 256))), (to_jsonb(repeat('x', 257))), (to_jsonb(repeat(E'x\n', 129)));

create temp table good on commit drop as
select tiq_test.body(jsonb_build_array(
    tiq_test.call('a', 'read'), tiq_test.call('b', 'write', 'k')
)) || '{"outcomes": {}}' as body;

create temp table bodies (body jsonb) on commit drop;
-- the documented shapes
insert into bodies
select g.body from good as g
union all
select tiq_test.body()
union all
select tiq_test.body(jsonb_build_array(
    tiq_test.call('c1', 'read'), tiq_test.call('c2', 'delegation'), tiq_test.call('c3', 'remote_agent'),
    tiq_test.call('c4', 'subagent_with_tools'), tiq_test.call('c5', 'write') - 'step_key'))
union all
select tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'read') || '{"extra": 1}'))
-- a body that is not an object
union all
select o.value from odd as o
-- each top-level field missing, or of another type
union all
select g.body - k.key from good as g cross join jsonb_object_keys(g.body) as k (key)
union all
select jsonb_set(g.body, array[k.key], coalesce(o.value, 'null'))
from good as g cross join jsonb_object_keys(g.body) as k (key) cross join odd as o
-- each field of either call missing, or of another type; the call itself replaced
union all
select jsonb_set(g.body, array['calls', i.i::text], (g.body -> 'calls' -> i.i) - f.field)
from good as g cross join generate_series(0, 1) as i (i)
cross join unnest(array['call_id', 'tool', 'arguments', 'classification', 'step_key']) as f (field)
union all
select jsonb_set(g.body, array['calls', i.i::text, f.field], coalesce(o.value, 'null'))
from good as g cross join generate_series(0, 1) as i (i)
cross join unnest(array['call_id', 'tool', 'arguments', 'classification', 'step_key']) as f (field)
cross join odd as o
union all
select jsonb_set(g.body, array['calls', i.i::text], coalesce(o.value, 'null'))
from good as g cross join generate_series(0, 1) as i (i) cross join odd as o
-- a call that is itself an array (lax JSON path would unwrap it), holding a
-- good call, two of them, or nothing
union all
select jsonb_set(g.body, '{calls}', jsonb_build_array(g.body -> 'calls'))
from good as g
union all
select jsonb_set(g.body, '{calls}', jsonb_build_array(jsonb_build_array(g.body -> 'calls' -> 1)))
from good as g
union all
select jsonb_set(g.body, '{calls}', jsonb_build_array(jsonb_build_array(
    g.body -> 'calls' -> 1, g.body -> 'calls' -> 1
)))
from good as g
union all
select jsonb_set(g.body, '{calls}', '[[]]')
from good as g
union all
-- a call id twice
select jsonb_set(g.body, '{calls,1,call_id}', '"a"') from good as g;

select cmp_ok((select count(*) from bodies), '>', 250::bigint, 'over 250 bodies');
select cmp_ok(
    (select count(*) from bodies as b where not pg_temp.refused(b.body)), '>=', 10::bigint,
    'of which some are valid'
);
select cmp_ok(
    (select count(*) from bodies as b where pg_temp.refused(b.body)), '>=', 200::bigint,
    'and most are not'
);
select is(
    (
        select count(*) from bodies as b
        where ticketiq._checkpoint_ok(b.body) is distinct from not pg_temp.refused(b.body)
    ),
    0::bigint,
    '_checkpoint_ok is true exactly where _validate_checkpoint accepts'
);
select lives_ok(
    $$select ticketiq._checkpoint_ok(b.body) from bodies as b$$,
    'and it raises for none'
);

select * from finish();
rollback;
