-- delegation_status: a failed child is reported failed with its reason
-- and no answer, so the parent does not wait for it.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select ticketiq.fail_run(tiq_test.rid(2), 1, 'tool quota exhausted');

select results_eq(
    $$select d.status, d.failure_reason, d.lease_lapsed, d.answer from ticketiq.delegation_status('deleg-1') as d$$,
    $$values ('failed'::text, 'tool quota exhausted'::text, false, null::jsonb)$$,
    'failed, with its reason, no answer'
);

select * from finish();
rollback;
