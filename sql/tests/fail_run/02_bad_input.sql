-- fail_run: a failure needs a reason and an agent.run.* event (TQ004).
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.fail_run(tiq_test.rid(1), 1, '')$$, 'TQ004', null, 'empty reason');
select throws_ok($$select ticketiq.fail_run(tiq_test.rid(1), 1, null)$$, 'TQ004', null, 'null reason');
select throws_ok(
    $$select ticketiq.fail_run(tiq_test.rid(1), 1, 'why', 'run.failed')$$, 'TQ004', null, 'not an agent.run.* event'
);
select throws_ok(
    $$select ticketiq.fail_run(tiq_test.rid(1), 1, 'why', 'agent.run.')$$, 'TQ004', null, 'an event with no name'
);
select throws_ok(
    $$select ticketiq.fail_run(tiq_test.rid(1), 1, 'why', 'agent.run.Failed!')$$, 'TQ004', null,
    'an event name that is not lower-case words'
);
select throws_ok(
    $$select ticketiq.fail_run(tiq_test.rid(1), 1, 'why', null)$$, 'TQ004', null, 'a null event'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the run is still running, unchanged');

select * from finish();
rollback;
