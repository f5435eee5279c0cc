-- fire_due_timers: a due timer fires once and wakes the run sleeping on it
-- (claimed at epoch + 1, no loss); a timer not yet due, and a second call,
-- fire nothing.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.wait_run(tiq_test.rid(1), 1, 'k1', 'timer:r1:k1', 30);
select tiq_test.advance(29);
select is_empty($$select 1 from ticketiq.fire_due_timers()$$, 'not due yet: nothing fired');
select tiq_test.advance(1);
select results_eq(
    $$select f.run_id, f.timer_key, f.woken from ticketiq.fire_due_timers() as f$$,
    $$values (tiq_test.rid(1), 'k1'::text, 1)$$, 'due: fired, the run woken'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.claim_reason, r.loss_count::integer
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('claimed'::text, 3::bigint, 'woken'::text, 0)$$, 'claimed at epoch 3, no loss'
);
select is_empty($$select 1 from ticketiq.fire_due_timers()$$, 'a second call fires nothing');
select is(
    (select count(*) from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.woken'),
    1::bigint, 'woken once'
);

select * from finish();
rollback;
