-- mark_calls_in_doubt: marks that are not a JSON array of 1..256 objects
-- with a text call id, text-or-null fields and no call twice are refused
-- with TQ004 before anything is read.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));

create function pg_temp.marks(p_marks jsonb) returns text
language sql
as $$
    select format('select * from ticketiq.mark_calls_in_doubt(%L, 1, 1, %L)',
        tiq_test.rid(1), p_marks);
$$;

select throws_ok(pg_temp.marks(null), 'TQ004', null, 'null');
select throws_ok(pg_temp.marks('{"call_id": "w1"}'), 'TQ004', null, 'not an array');
select throws_ok(pg_temp.marks('[]'), 'TQ004', null, 'empty');
select throws_ok(
    pg_temp.marks((select jsonb_agg(jsonb_build_object('call_id', 'c' || i))
        from generate_series(1, 257) as i)),
    'TQ004', null, 'more than 256');
select throws_ok(pg_temp.marks('["w1"]'), 'TQ004', null, 'an element not an object');
select throws_ok(pg_temp.marks('[{"call_id": 1}]'), 'TQ004', null, 'a call id not text');
select throws_ok(pg_temp.marks('[{"call_id": "w1", "seal": {}}]'), 'TQ004', null,
    'a seal not text');
select throws_ok(pg_temp.marks('[{"call_id": "w1"}, {"call_id": "w1"}]'), 'TQ004', null,
    'a call twice');
select throws_ok(pg_temp.marks('[{"call_id": "w1", "classification": "sideways"}]'),
    'TQ004', null, 'an unknown classification');

select * from finish();
rollback;
