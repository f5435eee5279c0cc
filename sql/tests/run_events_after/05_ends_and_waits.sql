-- run_events_after: how a run ends or waits is an event: failed (by its
-- writer, or by the sweep past its losses, with the reason), stopped,
-- released at shutdown, suspended, waiting for an approval.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.fail_run(tiq_test.rid(1), 1, 'the model failed');
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.stop_run(tiq_test.rid(2), 1, 'asked');
select tiq_test.new_run('p1', 8, tiq_test.rid(3));
select ticketiq.release_run(tiq_test.rid(3), 1, 'shutdown', '{}');
select tiq_test.new_run('p1', 8, tiq_test.rid(4), true);
select ticketiq.suspend_run(tiq_test.rid(4), 1, 'outage', '{}');
select tiq_test.new_run('p1', 8, tiq_test.rid(5));
select tiq_test.checkpoint(tiq_test.rid(5), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.request_approval(tiq_test.rid(5), 1, 1, 'w1', '{}');

select is(
    (select e.body ->> 'reason' from ticketiq.run_events_after(tiq_test.rid(1)) as e where e.kind = 'failed'),
    'the model failed', 'failed, with the reason'
);
select is(
    (select e.body ->> 'reason' from ticketiq.run_events_after(tiq_test.rid(2)) as e where e.kind = 'stopped'),
    'asked', 'stopped'
);
select is(
    (select e.epoch from ticketiq.run_events_after(tiq_test.rid(3)) as e where e.kind = 'released'),
    2::bigint, 'released, at the epoch it is handed on at'
);
select is(
    (select count(*) from ticketiq.run_events_after(tiq_test.rid(4)) as e where e.kind = 'suspended'),
    1::bigint, 'suspended'
);
select is(
    (select e.body ->> 'for' from ticketiq.run_events_after(tiq_test.rid(5)) as e where e.kind = 'waiting'),
    'approval', 'waiting for an approval'
);

select * from finish();
rollback;
