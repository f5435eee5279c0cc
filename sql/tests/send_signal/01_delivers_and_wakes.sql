-- send_signal: a signal to a run waiting for it is stored, audited and wakes
-- the run (claimed at epoch + 1); one to a run not waiting is stored for its
-- step to find, waking nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'signal:00000000-0000-0000-0000-000000000001:ack');

select results_eq(
    $$select s.created, s.woken
      from ticketiq.send_signal(tiq_test.rid(1), 'ack', '{"ok": true}', 'msg-1', 'ops') as s$$,
    $$values (true, 1)$$, 'stored, the waiting run woken'
);
select is((select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'claimed',
    'claimed for any process to resume');
select results_eq(
    $$select s.created, s.woken
      from ticketiq.send_signal(tiq_test.rid(2), 'ack', '1', 'msg-1') as s$$,
    $$values (true, 0)$$, 'a run not waiting: stored, nothing woken'
);
select is(
    (select a.detail ->> 'sender_key' from ticketiq.audit as a
     where a.run_id = tiq_test.rid(1) and a.event = 'workflow.signal_sent'),
    'msg-1', 'workflow.signal_sent audited'
);

select * from finish();
rollback;
