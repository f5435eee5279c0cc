-- wait_run: bad keys, seconds or detail, and a run not written ahead, raise
-- TQ004 and change nothing.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2), false, false);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.wait_run(tiq_test.rid(1), 1, '', 'timer:x', 5)$$,
    'TQ004', null, 'an empty step key');
select throws_ok($$select ticketiq.wait_run(tiq_test.rid(1), 1, 'k', 'reply:x', 5)$$,
    'TQ004', null, 'neither a timer nor a signal');
select throws_ok($$select ticketiq.wait_run(tiq_test.rid(1), 1, 'k', 'timer:x')$$,
    'TQ004', null, 'a timer without seconds');
select throws_ok($$select ticketiq.wait_run(tiq_test.rid(1), 1, 'k', 'signal:' || tiq_test.rid(2) || ':a')$$,
    'TQ004', null, 'another run''s signal');
select throws_ok($$select ticketiq.wait_run(tiq_test.rid(1), 1, 'k', 'signal:' || tiq_test.rid(1) || ':')$$,
    'TQ004', null, 'a signal without a name');
select throws_ok($$select ticketiq.wait_run(tiq_test.rid(1), 1, 'k', 'timer:x', -1)$$,
    'TQ004', null, 'negative seconds');
select throws_ok($$select ticketiq.wait_run(tiq_test.rid(1), 1, 'k', 'timer:x', 5, '[]')$$,
    'TQ004', null, 'a detail not an object');
select throws_ok($$select ticketiq.wait_run(tiq_test.rid(2), 1, 'k', 'timer:x', 5)$$,
    'TQ004', null, 'a run not written ahead');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
