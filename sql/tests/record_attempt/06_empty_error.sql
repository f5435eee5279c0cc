-- record_attempt: a failure needs its error text: an empty or null error
-- raises TQ004 naming the error, and counts nothing.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', 'HTTP 503');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', '')$$,
    'TQ004', 'error must be non-empty', 'an empty error'
);
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', null)$$,
    'TQ004', 'error must be non-empty', 'a null error'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the count is still 1: nothing counted');

select * from finish();
rollback;
