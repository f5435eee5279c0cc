-- await_first: fenced as any write of a run: a stale epoch is TQ002, a run
-- that is not running TQ003/TQ006; nothing joins the group.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1), true);
select tiq_test.new_child(tiq_test.rid(1), 'k.0', 'c1', 60, tiq_test.rid(11));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.take_over(tiq_test.rid(1), 'p2', 60);

select throws_ok(
    $$select * from ticketiq.await_first(tiq_test.rid(1), 1, 'k', array[tiq_test.rid(11)])$$,
    'TQ002', null, 'a stale epoch'
);
select is_empty($$select 1 from ticketiq.first_waits$$, 'nothing joined');
select ticketiq.fail_run(tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 'gone');
select throws_ok(
    $$select * from ticketiq.await_first(
        tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 'k', array[tiq_test.rid(11)])$$,
    'TQ006', null, 'a run that ended'
);

select * from finish();
rollback;
