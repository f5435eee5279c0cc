-- revoke_api_key: a live key is revoked at the database clock (true); a
-- second revoke or an unknown key returns false and changes nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.create_api_key('abcd1234', sha256('secret'), 'svc');
select is(ticketiq.revoke_api_key('abcd1234'), true, 'revoked');
select is(
    (select k.revoked_at from ticketiq.api_keys as k), '2030-01-01 00:00:00+00'::timestamptz, 'at the database clock'
);
select tiq_test.save_fingerprint();
select is(ticketiq.revoke_api_key('abcd1234'), false, 'a second revoke: false');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and nothing changed');

select * from finish();
rollback;
