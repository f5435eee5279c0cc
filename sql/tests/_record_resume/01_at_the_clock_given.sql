-- _record_resume: record_resume's work at the clock its caller read: the
-- call is finished, and the settled event written, at p_now.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select ticketiq._record_resume(
    tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "unknown"}]', '2030-01-01 00:00:09.5+00'
);

select is(
    (select c.finished_at from ticketiq.calls as c where c.run_id = tiq_test.rid(1)),
    '2030-01-01 00:00:09.5+00'::timestamptz, 'the call finished at the clock given'
);
select is(
    (select e.at from ticketiq.run_events as e where e.run_id = tiq_test.rid(1) and e.kind = 'call_settled'),
    '2030-01-01 00:00:09.5+00'::timestamptz, 'its event at the clock given'
);

select * from finish();
rollback;
