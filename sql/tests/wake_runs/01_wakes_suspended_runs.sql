-- wake_runs: every run suspended on the key becomes claimed at epoch + 1
-- (no loss counted, claim_reason woken, wait key cleared), each audited
-- agent.run.woken; it returns how many it woke.  Runs suspended on other
-- keys are untouched; a woken run is adopted.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select tiq_test.new_run('p1', 8, tiq_test.rid(2), true);
select tiq_test.new_run('p1', 8, tiq_test.rid(3), true);
select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1');
select ticketiq.suspend_run(tiq_test.rid(2), 1, 'reply:conv-1');
select ticketiq.suspend_run(tiq_test.rid(3), 1, 'reply:conv-2');
select tiq_test.advance(5);

select is(ticketiq.wake_runs('reply:conv-1'), 2, 'two runs woken');
select results_eq(
    $$select r.run_id, r.status::text, r.epoch::bigint, r.wait_key, r.claim_reason, r.loss_count::integer,
        r.lease_holder, r.updated_at
      from ticketiq.runs as r where r.run_id in (tiq_test.rid(1), tiq_test.rid(2)) order by r.run_id$$,
    $$values (tiq_test.rid(1), 'claimed'::text, 3::bigint, null::text, 'woken'::text, 0, null::text,
              '2030-01-01 00:00:05+00'::timestamptz),
             (tiq_test.rid(2), 'claimed', 3, null, 'woken', 0, null, '2030-01-01 00:00:05+00')$$,
    'claimed at epoch 3, woken, no loss, no wait key'
);
select results_eq(
    $$select a.run_id, a.detail ->> 'wait_key', a.at from ticketiq.audit as a
      where a.event = 'agent.run.woken' order by a.run_id$$,
    $$values (tiq_test.rid(1), 'reply:conv-1'::text, '2030-01-01 00:00:05+00'::timestamptz),
             (tiq_test.rid(2), 'reply:conv-1', '2030-01-01 00:00:05+00')$$,
    'agent.run.woken audited for each, with the key'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.wait_key from ticketiq.runs as r where r.run_id = tiq_test.rid(3)$$,
    $$values ('suspended'::text, 2::bigint, 'reply:conv-2'::text)$$,
    'the run waiting on another key is untouched'
);
select results_eq(
    $$select a.run_id, a.epoch, a.loss_count from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a$$,
    $$values (tiq_test.rid(1), 4::bigint, 0)$$,
    'a woken run is adopted (epoch 4, still no loss)'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'agent.run.lease_lapsed'), 0::bigint,
    'no lapse audited'
);

select * from finish();
rollback;
