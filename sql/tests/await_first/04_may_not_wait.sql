-- await_first: a run that may not wait (runs.may_wait false) is answered
-- 'waiting' while no child has ended, keeps its lease and asks again.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), false);
select tiq_test.new_child(tiq_test.rid(1), 'k.0', 'c1', 60, tiq_test.rid(11));

select results_eq(
    $$select f.outcome, f.child_run_id, f.epoch
      from ticketiq.await_first(tiq_test.rid(1), 1, 'k', array[tiq_test.rid(11)]) as f$$,
    $$values ('waiting'::text, null::uuid, 1::bigint)$$,
    'none ended: waiting'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('running'::text, 1::bigint, 'p1'::text)$$,
    'the run keeps its lease'
);
select ticketiq.fail_run(tiq_test.rid(11), 1, 'done');
select results_eq(
    $$select f.outcome, f.child_run_id, f.place
      from ticketiq.await_first(tiq_test.rid(1), 1, 'k', array[tiq_test.rid(11)]) as f$$,
    $$values ('first'::text, tiq_test.rid(11), 0)$$,
    'asked again once the child ended: first'
);

select * from finish();
rollback;
