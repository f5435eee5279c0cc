-- delegation_status: a delegation key no child was ever started for
-- returns no row (the parent then starts the child).
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 60, tiq_test.rid(2));

select is_empty($$select 1 from ticketiq.delegation_status('deleg-2')$$, 'no row for a key never used');
select is_empty(
    $$select 1 from ticketiq.delegation_status(tiq_test.rid(2)::text)$$,
    'a child is found by its delegation key, not by its run id'
);

select * from finish();
rollback;
