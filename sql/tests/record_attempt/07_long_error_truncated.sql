-- record_attempt: an error over 2,000 characters is kept cut to its first
-- 2,000, not refused; one of 2,000 is kept whole.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));

select is(
    (
        select a.attempts
        from ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', repeat('a', 1999) || 'bc' || repeat('d', 500)) as a
    ),
    1,
    'an error of 2,501 characters is counted'
);
select is(
    (select a.last_error from ticketiq.attempts as a where a.run_id = tiq_test.rid(1) and a.target = 'model'),
    repeat('a', 1999) || 'b',
    'it is kept as its first 2,000 characters'
);
select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'w1', repeat('é', 2000));
select is(
    (select a.last_error from ticketiq.attempts as a where a.run_id = tiq_test.rid(1) and a.target = 'w1'),
    repeat('é', 2000),
    'an error of 2,000 characters (not bytes) is kept whole'
);
select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'w1', repeat('x', 3000));
select is(
    (select length(a.last_error) from ticketiq.attempts as a where a.run_id = tiq_test.rid(1) and a.target = 'w1'),
    2000,
    'a later long error replaces the last error, cut the same way'
);

select * from finish();
rollback;
