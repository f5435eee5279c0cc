-- wait_run: a step key that consumed a signal is bound to that signal's name:
-- asked for another name it raises TQ007 and changes nothing, never handing
-- back the earlier signal's payload (issue 46, finding 3).
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"n": 1}', 's1');
select ticketiq.send_signal(tiq_test.rid(1), 'other', '{"n": 2}', 's2');
select ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'signal:' || tiq_test.rid(1) || ':ack');
select tiq_test.save_fingerprint();

select throws_ok(
    format($$select ticketiq.wait_run(%L, 1, 'k1', %L)$$,
        tiq_test.rid(1), 'signal:' || tiq_test.rid(1) || ':other'),
    'TQ007', null, 'the step key consumed ack: other is a conflict'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select results_eq(
    format($$select w.outcome, w.payload from ticketiq.wait_run(%L, 1, 'k1', %L) as w$$,
        tiq_test.rid(1), 'signal:' || tiq_test.rid(1) || ':ack'),
    $$values ('signal'::text, '{"n": 1}'::jsonb)$$,
    'asked again for ack, the step gets the signal it consumed'
);

select * from finish();
rollback;
