-- write_checkpoint: a lease that lapsed by the database clock fences the
-- writer (TQ003) even before any sweep claimed the run (I1, I11).
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));

select tiq_test.advance(7.999);
select lives_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 1, 1)$$,
    'a millisecond before expiry the write goes through'
);

select tiq_test.advance(0.001);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 1, 2)$$,
    'TQ003', null, 'at the expiry instant the lease has lapsed'
);

select tiq_test.advance(60);
select throws_ok(
    $$select tiq_test.checkpoint(tiq_test.rid(1), 1, 2)$$,
    'TQ003', null, 'long after expiry, before any sweep'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'running',
    'the run is still running, waiting for the sweep'
);
select is(
    (select r.last_step::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 1,
    'last step is still 1'
);

select * from finish();
rollback;
