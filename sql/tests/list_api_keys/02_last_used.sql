-- list_api_keys: each key with when it last verified a request (null: never).
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.create_api_key('used0000', sha256('a'), 'svc-a');
select ticketiq.create_api_key('idle0000', sha256('b'), 'svc-b');
select tiq_test.advance(5);
select ticketiq.note_api_key_use('used0000');
select results_eq(
    $$select k.key_id, k.last_used_at from ticketiq.list_api_keys() as k order by k.key_id$$,
    $$values ('idle0000'::text, null::timestamptz), ('used0000', '2030-01-01 00:00:05+00'::timestamptz)$$,
    'the used key with its time, the idle one with none'
);

select * from finish();
rollback;
