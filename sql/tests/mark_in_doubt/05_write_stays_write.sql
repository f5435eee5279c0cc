-- mark_in_doubt: a write stays a write (I7): a tool reclassified as a read
-- does not turn a changing call into a read.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('d1', 'delegation'))
);

select is(
    (select m.marked_classification from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1', 'read') as m),
    'write',
    'a write marked with the tool''s classification read now is still marked write'
);
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'), 'in_doubt',
    'and it is in doubt'
);
select is(
    (select m.marked_classification from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1', 'read') as m),
    'write',
    'marking it again as a read returns the write mark'
);
select is(
    (select m.marked_classification from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'd1', 'read') as m),
    'delegation',
    'a delegation marked with read stays a delegation'
);

select * from finish();
rollback;
