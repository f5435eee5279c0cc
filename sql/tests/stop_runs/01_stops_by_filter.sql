-- stop_runs: a person's Stop for every unfinished run the filters match,
-- each recorded as request_stop records one (a suspended run woken); runs
-- finished, of another owner, or asked already are left out.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2), true);
select ticketiq.suspend_run(tiq_test.rid(2), 1, 'reply:x');
select tiq_test.new_run('p1', 8, tiq_test.rid(3));
select ticketiq.fail_run(tiq_test.rid(3), 1, 'failed');
select tiq_test.new_run('p1', 8, tiq_test.rid(4));
select ticketiq.request_stop(tiq_test.rid(4), 'carol');
select ticketiq.start_run('p1', 'someone@else', 'ra', 'web', 'playground', false, 8, '{}', null, null, '{}',
    tiq_test.rid(5));

select results_eq(
    $$select s.run_id, s.status from ticketiq.stop_runs('alice', 'cleanup', 'owner@example.com') as s
      order by s.run_id$$,
    $$values (tiq_test.rid(1), 'running'::text), (tiq_test.rid(2), 'claimed'::text)$$,
    'the owner''s unfinished runs not asked yet, the suspended one woken'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'agent.run.stop_requested' and a.actor = 'alice'),
    2::bigint, 'each audited as request_stop audits it'
);
select is(
    (select r.stop_requested_by from ticketiq.runs as r where r.run_id = tiq_test.rid(4)), 'carol',
    'a run asked already keeps its first request'
);
select is(
    (select r.stop_requested_at from ticketiq.runs as r where r.run_id = tiq_test.rid(5)), null,
    'another owner''s run is left alone'
);
select is(
    (select count(*) from ticketiq.stop_runs('alice', null, 'owner@example.com')), 0::bigint,
    'a repeat asks nothing again'
);

select * from finish();
rollback;
