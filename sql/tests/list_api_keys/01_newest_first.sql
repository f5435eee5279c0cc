-- list_api_keys: every key, newest first, revoked ones with the time; no
-- hash is shown.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.create_api_key('older000', sha256('a'), 'svc-a');
select tiq_test.advance(5);
select ticketiq.create_api_key('newer000', sha256('b'), 'svc-b', '{}', '{admin}');
select ticketiq.revoke_api_key('older000');
select results_eq(
    $$select k.key_id, k.identity, k.scopes, k.revoked_at from ticketiq.list_api_keys() as k$$,
    $$values ('newer000'::text, 'svc-b'::text, '{admin}'::text[], null::timestamptz),
             ('older000', 'svc-a', '{}', '2030-01-01 00:00:05+00'::timestamptz)$$,
    'newest first, with revocation times'
);
select is(
    (select 'key_hash' = any(p.proargnames) from pg_catalog.pg_proc as p
     where p.oid = 'ticketiq.list_api_keys()'::regprocedure),
    false, 'no hash column'
);

select * from finish();
rollback;
