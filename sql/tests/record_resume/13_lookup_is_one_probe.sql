-- record_resume: a run has one resume row per epoch, crash_resumed or resumed,
-- and the lookup that finds it (the function's own query, copied here) probes
-- the unique index on (run_id, epoch) in its generic plan, never the event's
-- index: ANDed with it, each lookup walked every resume row ever written.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1), true);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select ticketiq.suspend_run(tiq_test.rid(1), 1, 'reply:conv-1');
select ticketiq.wake_runs('reply:conv-1');
select ticketiq.adopt_run('p2', 8, tiq_test.rid(1));

select is(
    (select count(*) from ticketiq.audit as a
     where a.run_id = tiq_test.rid(1) and a.epoch = 4 and a.event = 'agent.run.resumed'),
    1::bigint, 'the adoption wrote the epoch''s resumed row'
);
select throws_ok(
    $$insert into ticketiq.audit (at, event, run_id, epoch, actor)
      values (ticketiq.now(), 'agent.run.resumed', tiq_test.rid(1), 4, 'p2')$$,
    '23505', null, 'a second resume row for the same run and epoch is refused'
);

set local plan_cache_mode = force_generic_plan;
-- Which index, not whether one: with the suite's other files writing and rolling back
-- audit rows at once, an autovacuum may leave audit's statistics saying it is empty,
-- and a sequential scan of an empty table is cheapest.
set local enable_seqscan = off;
prepare lookup (uuid, bigint) as
select
    a.audit_id,
    a.detail
from ticketiq.audit as a
where a.run_id = $1 and a.epoch = $2
    and a.event in ('agent.run.crash_resumed', 'agent.run.resumed')
order by a.audit_id
limit 1;

select matches(
    tiq_test.plan_of('execute lookup(tiq_test.rid(1), 4)'), 'audit_one_resume_per_epoch_idx',
    'the lookup probes audit_one_resume_per_epoch_idx'
);
select doesnt_match(
    tiq_test.plan_of('execute lookup(tiq_test.rid(1), 4)'), 'audit_event_idx',
    'and never walks the event''s index'
);

select * from finish();
rollback;
