-- note_api_key_use: a live key's use is recorded at the database clock,
-- again only once it is over a minute old (a busy key costs no write per
-- request).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.create_api_key('abcd1234', sha256('secret'), 'svc');
select is(
    (select k.last_used_at from ticketiq.api_keys as k), null::timestamptz, 'a new key was never used'
);
select is(ticketiq.note_api_key_use('abcd1234'), true, 'the first use is recorded');
select tiq_test.advance(30);
select tiq_test.save_fingerprint();
select is(ticketiq.note_api_key_use('abcd1234'), false, 'within the minute: not again');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and nothing changed');
select tiq_test.advance(31);
select ticketiq.note_api_key_use('abcd1234');
select is(
    (select k.last_used_at from ticketiq.api_keys as k), '2030-01-01 00:01:01+00'::timestamptz,
    'over a minute later it moves'
);

select * from finish();
rollback;
