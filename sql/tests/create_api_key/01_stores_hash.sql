-- create_api_key: a key is stored by its 32-byte hash with its identity,
-- run-as names and scopes, created at the database clock.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select results_eq(
    $$select k.key_id, k.identity, k.run_as, k.scopes, k.created_at
      from ticketiq.create_api_key('abcd1234', sha256('secret'), 'svc:triage', '{alice}', '{admin}') as k$$,
    $$values ('abcd1234'::text, 'svc:triage'::text, '{alice}'::text[], '{admin}'::text[],
              '2030-01-01 00:00:00+00'::timestamptz)$$,
    'returns the key without its hash'
);
select is(
    (select k.key_hash from ticketiq.api_keys as k), sha256('secret'), 'only the hash is stored'
);

select * from finish();
rollback;
