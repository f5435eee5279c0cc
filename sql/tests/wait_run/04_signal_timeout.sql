-- wait_run: a signal wait with a timeout suspends with its timer; once the
-- timer is due and no signal came, the step gets 'timeout'.  A signal that
-- comes first cancels the timer, so it never fires.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select results_eq(
    $$select w.outcome, w.epoch
      from ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'signal:00000000-0000-0000-0000-000000000001:ack', 60) as w$$,
    $$values ('suspended'::text, 2::bigint)$$, 'suspended with a 60 s timeout'
);
select tiq_test.advance(61);
select ticketiq.fire_due_timers();
select ticketiq.adopt_run('p2', 600);
select results_eq(
    $$select w.outcome, w.payload
      from ticketiq.wait_run(tiq_test.rid(1), 4, 'k1', 'signal:00000000-0000-0000-0000-000000000001:ack', 60) as w$$,
    $$values ('timeout'::text, null::jsonb)$$, 'no signal came: timeout'
);
select ticketiq.wait_run(tiq_test.rid(1), 4, 'k2', 'signal:00000000-0000-0000-0000-000000000001:ack', 60);
select ticketiq.send_signal(tiq_test.rid(1), 'ack', '"yes"', 's1');
select ticketiq.adopt_run('p2', 600);
select results_eq(
    $$select w.outcome, w.payload
      from ticketiq.wait_run(tiq_test.rid(1), 7, 'k2', 'signal:00000000-0000-0000-0000-000000000001:ack', 60) as w$$,
    $$values ('signal'::text, '"yes"'::jsonb)$$, 'the signal came first'
);
select results_eq(
    $$select t.timer_key, t.state from ticketiq.workflow_timers as t order by t.timer_key$$,
    $$values ('k1'::text, 'fired'::text), ('k2', 'cancelled')$$, 'the answered wait''s timer cancelled'
);

select * from finish();
rollback;
