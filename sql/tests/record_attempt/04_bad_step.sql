-- record_attempt: a step under 1 (or null) raises TQ004 naming the step,
-- and counts nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, 0, 'model', 'HTTP 503')$$,
    'TQ004', 'step must be >= 1, got 0', 'step 0'
);
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, -1, 'model', 'HTTP 503')$$,
    'TQ004', 'step must be >= 1, got -1', 'a negative step'
);
select throws_ok(
    $$select ticketiq.record_attempt(tiq_test.rid(1), 1, null, 'model', 'HTTP 503')$$,
    'TQ004', 'step must be >= 1, got null', 'a null step'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing counted');

select * from finish();
rollback;
