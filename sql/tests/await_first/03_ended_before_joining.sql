-- await_first: children that ended before they joined the group (the run
-- was lost between starting them and waiting): the one that ended earliest
-- is the first (its place breaks a tie), recorded at once; the run keeps
-- its lease.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.new_child(tiq_test.rid(1), 'k.0', 'c1', 60, tiq_test.rid(11));
select tiq_test.new_child(tiq_test.rid(1), 'k.1', 'c1', 60, tiq_test.rid(12));
select tiq_test.new_child(tiq_test.rid(1), 'k.2', 'c1', 60, tiq_test.rid(13));
select tiq_test.advance(1);
select ticketiq.fail_run(tiq_test.rid(13), 1, 'third place, first to end');
select tiq_test.advance(1);
select ticketiq.fail_run(tiq_test.rid(11), 1, 'later');

select results_eq(
    $$select f.outcome, f.child_run_id, f.place, f.epoch
      from ticketiq.await_first(tiq_test.rid(1), 1, 'k',
          array[tiq_test.rid(11), tiq_test.rid(12), tiq_test.rid(13)]) as f$$,
    $$values ('first'::text, tiq_test.rid(13), 2, 1::bigint)$$,
    'the earliest end is the first'
);
select results_eq(
    $$select r.status::text, r.epoch::bigint, r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('running'::text, 1::bigint, 'p1'::text)$$,
    'the run keeps its lease'
);

-- A tie (one transaction's clock): the lower place.
select tiq_test.new_run('p1', 60, tiq_test.rid(2), true);
select tiq_test.new_child(tiq_test.rid(2), 'j.0', 'c1', 60, tiq_test.rid(21));
select tiq_test.new_child(tiq_test.rid(2), 'j.1', 'c1', 60, tiq_test.rid(22));
select ticketiq.fail_run(tiq_test.rid(22), 1, 'tie');
select ticketiq.fail_run(tiq_test.rid(21), 1, 'tie');
select results_eq(
    $$select f.child_run_id, f.place
      from ticketiq.await_first(tiq_test.rid(2), 1, 'j', array[tiq_test.rid(21), tiq_test.rid(22)]) as f$$,
    $$values (tiq_test.rid(21), 0)$$,
    'a tie goes to the lower place'
);

select * from finish();
rollback;
