-- get_entry: no row for an entry never accepted, nor for a known sender id
-- under another kind.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('a2a', 'task-1');

select is_empty($$select 1 from ticketiq.get_entry('a2a', 'task-2')$$, 'an unknown sender id: no row');
select is_empty($$select 1 from ticketiq.get_entry('webhook', 'task-1')$$, 'another kind: no row');

select * from finish();
rollback;
