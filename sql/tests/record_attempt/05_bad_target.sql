-- record_attempt: an empty, null or over-long target (over 256 characters;
-- checkpoint call ids have no limit of their own) raises TQ004 naming the
-- target, and counts nothing; a target of 256 characters is counted.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, '', 'HTTP 503')$$,
    'TQ004', 'target must be 1 to 256 characters, got 0', 'an empty target'
);
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, null, 'HTTP 503')$$,
    'TQ004', 'target must be 1 to 256 characters, got null', 'a null target'
);
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, repeat('c', 257), 'HTTP 503')$$,
    'TQ004', 'target must be 1 to 256 characters, got 257', 'a target of 257 characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing counted');
select is(
    (select a.attempts from ticketiq.record_attempt(tiq_test.rid(1), 1, 1, repeat('c', 256), 'HTTP 503') as a), 1,
    'a target of 256 characters is counted'
);

select * from finish();
rollback;
