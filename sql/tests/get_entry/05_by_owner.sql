-- get_entry: an owner finds its own entry of a sender id, never another
-- owner's of the same id; with no owner (an operator) every owner's, oldest
-- first.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.accept_entry('a2a', 'task-1', '{}', 'alice', 'alice', 'a2a');
select ticketiq.accept_entry('a2a', 'task-1', '{}', 'bob', 'bob', 'a2a');

select results_eq(
    $$select g.run_id from ticketiq.get_entry('a2a', 'task-1', 'bob') as g$$,
    $$select e.planned_run_id from ticketiq.entries as e where e.owner = 'bob'$$,
    'bob finds his own entry'
);
select results_eq(
    $$select g.run_id from ticketiq.get_entry('a2a', 'task-1', 'alice') as g$$,
    $$select e.planned_run_id from ticketiq.entries as e where e.owner = 'alice'$$,
    'alice finds hers'
);
select is_empty($$select 1 from ticketiq.get_entry('a2a', 'task-1', 'carol')$$, 'an owner who sent none: no row');
select results_eq(
    $$select g.entry_id from ticketiq.get_entry('a2a', 'task-1') as g$$,
    $$select e.entry_id from ticketiq.entries as e order by e.entry_id$$,
    'no owner: every owner''s entry, oldest first'
);

select * from finish();
rollback;
