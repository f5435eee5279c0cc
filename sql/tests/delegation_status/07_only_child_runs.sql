-- delegation_status: only child runs (with a parent) are found: a run
-- started without a parent under the same key (an entry's run, keyed
-- <kind>:<sender id>, or any keyed start) is no delegation.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.entry_run('task-1');
select ticketiq.start_run('p1', 'o', 'ra', 'web', 'ep', false, 8, '{}', null, 'deleg-x');

select is_empty($$select 1 from ticketiq.delegation_status('a2a:task-1')$$, 'an entry''s run is not found');
select is_empty($$select 1 from ticketiq.delegation_status('deleg-x')$$, 'nor a keyed run without a parent');

select * from finish();
rollback;
