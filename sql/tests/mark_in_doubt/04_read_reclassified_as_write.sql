-- mark_in_doubt: a call recorded as a read whose tool is a write by now
-- (p_classification 'write') is marked, and settles, as a write.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));

create temp table marked on commit drop as
select m.* from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r1', 'write') as m;

select is((select m.marked_classification from marked as m), 'write', 'marked as a write');
select is((select m.state from marked as m), 'in_doubt', 'in doubt');
select is(
    (select c.classification from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'r1'),
    'read',
    'the step''s own classification is kept as recorded'
);
select is(
    (select c.marked_classification from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'r1'),
    'write',
    'the mark records write'
);

select * from finish();
rollback;
