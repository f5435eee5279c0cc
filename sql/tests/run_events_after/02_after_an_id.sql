-- run_events_after: after an event id, only the later events, oldest first,
-- at most p_limit; ids grow; another run's events are not read.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select tiq_test.checkpoint(tiq_test.rid(2), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2, jsonb_build_array(tiq_test.call('r2', 'read')));

select results_eq(
    $$select e.step from ticketiq.run_events_after(
        tiq_test.rid(1),
        (select min(f.event_id) from ticketiq.run_events_after(tiq_test.rid(1)) as f)
    ) as e$$,
    $$values (1), (2)$$,
    'after the first event: the two steps, not the other run''s'
);
select results_eq(
    $$select e.step from ticketiq.run_events_after(tiq_test.rid(1), 0, 2) as e$$,
    $$values (0), (1)$$,
    'at most p_limit, oldest first'
);
select ok(
    (select bool_and(e.event_id > 0) and count(distinct e.event_id) = 3
     from ticketiq.run_events_after(tiq_test.rid(1)) as e),
    'each event has its own id'
);
select is_empty(
    $$select 1 from ticketiq.run_events_after(
        tiq_test.rid(1), (select max(f.event_id) from ticketiq.run_events_after(tiq_test.rid(1)) as f))$$,
    'after the last event: none'
);

select * from finish();
rollback;
