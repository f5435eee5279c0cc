-- create_api_key: a bad key id, a hash that is not 32 bytes, an empty
-- identity, a bad run-as or scope list, or a key id taken raises TQ004 and
-- writes nothing.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.create_api_key('taken123', sha256('x'), 'svc');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.create_api_key('short', sha256('x'), 'svc')$$, 'TQ004', null, 'a short key id');
select throws_ok($$select ticketiq.create_api_key('bad_id__', sha256('x'), 'svc')$$, 'TQ004', null, 'a key id with _');
select throws_ok($$select ticketiq.create_api_key('abcd1234', '\x00', 'svc')$$, 'TQ004', null, 'a 1-byte hash');
select throws_ok($$select ticketiq.create_api_key('abcd1234', sha256('x'), '')$$, 'TQ004', null, 'an empty identity');
select throws_ok(
    $$select ticketiq.create_api_key('abcd1234', sha256('x'), 'svc', array[''])$$, 'TQ004', null, 'an empty run-as'
);
select throws_ok(
    $$select ticketiq.create_api_key('abcd1234', sha256('x'), 'svc', '{}', null)$$, 'TQ004', null, 'null scopes'
);
select throws_ok(
    $$select ticketiq.create_api_key('taken123', sha256('y'), 'svc')$$, 'TQ004', 'key_id taken123 is taken',
    'a key id taken'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
