-- run_events_after: an unknown run raises TQ001; a negative or null p_after,
-- or a limit outside 1..1000, raises TQ004.  Nothing is written either way.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.run_events_after(tiq_test.rid(9))$$, 'TQ001', null, 'an unknown run'
);
select throws_ok(
    $$select * from ticketiq.run_events_after(tiq_test.rid(1), -1)$$, 'TQ004', null, 'a negative id'
);
select throws_ok(
    $$select * from ticketiq.run_events_after(tiq_test.rid(1), null)$$, 'TQ004', null, 'a null id'
);
select throws_ok(
    $$select * from ticketiq.run_events_after(tiq_test.rid(1), 0, 0)$$, 'TQ004', null, 'a limit of 0'
);
select throws_ok(
    $$select * from ticketiq.run_events_after(tiq_test.rid(1), 0, 1001)$$, 'TQ004', null, 'a limit over 1000'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
