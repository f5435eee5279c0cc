-- take_over_child: a child lost more than p_max_losses times (default 2) is
-- failed instead of adopted: no row, status failed with its reason and
-- finished; it is never adopted again.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-3', 'c1', 60, tiq_test.rid(3));
select is(tiq_test.take_over(tiq_test.rid(2), 'c2'), 3::bigint, 'first loss: claimed (2), adopted (3)');
select is(tiq_test.take_over(tiq_test.rid(2), 'c3'), 5::bigint, 'second loss: claimed (4), adopted (5)');
select tiq_test.advance(9);

select is_empty(
    $$select 1 from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30)$$,
    'the third loss: no row'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.loss_count::integer, r.lease_holder, r.finished_at is not null
      from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('failed'::text, 6::bigint, 3, null::text, true)$$,
    'the child is failed and finished at epoch 6, three losses counted'
);
select matches(
    (select r.failure_reason from ticketiq.runs as r where r.run_id = tiq_test.rid(2)),
    '^lost 3 times \(more than 2\): .*c3',
    'the reason says it was lost 3 times and names the last holder'
);
select is_empty(
    $$select 1 from ticketiq.adopt_run('p9', 8, tiq_test.rid(2))$$, 'the failed child is never adopted'
);

-- p_max_losses 0: the first loss is the last.
select tiq_test.advance(60);
select ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(3), 'p1', 30, 0);
select is(
    (select (r.status::text, r.loss_count::integer) from ticketiq.runs as r where r.run_id = tiq_test.rid(3)),
    row('failed'::text, 1),
    'with p_max_losses 0 the first loss fails the child'
);

select * from finish();
rollback;
