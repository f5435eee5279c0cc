-- run_events_after: a step_written event's text and calls are its
-- checkpoint's, read when the event is; the row itself carries no copy (a
-- step is not written twice), and a row that does carry a body (written by
-- schema 23 or before) is read as it is.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));

select is(
    (select e.body from ticketiq.run_events as e where e.run_id = tiq_test.rid(1) and e.kind = 'step_written'),
    '{}'::jsonb,
    'the step_written row carries no copy of the step'
);
select is(
    (select e.body from ticketiq.run_events_after(tiq_test.rid(1)) as e where e.kind = 'step_written'),
    '{"text": "help", "calls": [{"call_id": "r1", "tool": "tool_read", "classification": "read"}]}'::jsonb,
    'the event is read with the text and calls of its checkpoint'
);
update ticketiq.run_events as e set body = '{"text": "as written then", "calls": []}'
where e.run_id = tiq_test.rid(1) and e.kind = 'step_written';
select is(
    (select e.body ->> 'text' from ticketiq.run_events_after(tiq_test.rid(1)) as e where e.kind = 'step_written'),
    'as written then',
    'a row written with its own body (schema 23) is read as it is'
);

select * from finish();
rollback;
