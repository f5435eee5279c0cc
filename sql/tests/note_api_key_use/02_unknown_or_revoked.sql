-- note_api_key_use: an unknown or revoked key records nothing (false).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.create_api_key('abcd1234', sha256('secret'), 'svc');
select ticketiq.revoke_api_key('abcd1234');
select tiq_test.save_fingerprint();
select is(ticketiq.note_api_key_use('abcd1234'), false, 'a revoked key: false');
select is(ticketiq.note_api_key_use('nosuchkey'), false, 'an unknown key: false');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and nothing changed');

select * from finish();
rollback;
