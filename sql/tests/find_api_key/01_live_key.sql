-- find_api_key: a live key gives its hash, identity, run-as and scopes;
-- an unknown key gives no row; reading changes nothing.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.create_api_key('abcd1234', sha256('secret'), 'svc', '{alice,bob}', '{admin}');
select tiq_test.save_fingerprint();
select results_eq(
    $$select k.key_hash, k.identity, k.run_as, k.scopes from ticketiq.find_api_key('abcd1234') as k$$,
    $$values (sha256('secret'), 'svc'::text, '{alice,bob}'::text[], '{admin}'::text[])$$,
    'the live key'
);
select is_empty($$select * from ticketiq.find_api_key('nope0000')$$, 'an unknown key: no row');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'reading changed nothing');

select * from finish();
rollback;
