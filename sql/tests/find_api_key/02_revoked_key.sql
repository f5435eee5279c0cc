-- find_api_key: a revoked key is not found.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.create_api_key('abcd1234', sha256('secret'), 'svc');
select ticketiq.revoke_api_key('abcd1234');
select is_empty($$select * from ticketiq.find_api_key('abcd1234')$$, 'a revoked key: no row');

select * from finish();
rollback;
