-- stop_runs: a bad actor, filter or limit is TQ004 and changes nothing.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok($$select * from ticketiq.stop_runs('')$$, 'TQ004', null, 'an empty actor');
select throws_ok(
    $$select * from ticketiq.stop_runs('alice', p_statuses => array['failed'])$$, 'TQ004', null,
    'a finished status'
);
select throws_ok($$select * from ticketiq.stop_runs('alice', p_limit => 0)$$, 'TQ004', null, 'a limit of 0');
select throws_ok($$select * from ticketiq.stop_runs('alice', p_limit => 1001)$$, 'TQ004', null, 'over 1000');
select throws_ok($$select * from ticketiq.stop_runs('alice', p_kind => '')$$, 'TQ004', null, 'an empty kind');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
