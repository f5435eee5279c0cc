-- purge_history: a purged run's failed attempts and audit_once keys go with
-- it (on delete cascade from its row); those of a run still kept stay.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
-- 1: failed after retrying its model step and a tool call, a downgrade audited.
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'model', 'HTTP 503');
select ticketiq.record_attempt(tiq_test.rid(1), 1, 1, 'w1', 'timeout');
select ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w1', '{}');
select ticketiq.fail_run(tiq_test.rid(1), 1, 'model kept failing');
-- 2: running (lease far ahead) with an attempt and a key of its own.
select tiq_test.new_run('p1', 864000, tiq_test.rid(2));
select ticketiq.record_attempt(tiq_test.rid(2), 1, 1, 'model', 'HTTP 503');
select ticketiq.audit_once(tiq_test.rid(2), 1, 'agent.run.guarantee_downgraded', 'w1', '{}');

select tiq_test.advance(3600);
select results_eq(
    $$select * from ticketiq.purge_history(1800)$$,
    $$values (1, 0, 0, 0, 1, 0, 3)$$,
    'counts: 1 run, its transcript entry and 3 audit rows (started, downgrade, failed)'
);
select is(
    (select count(*)::integer from ticketiq.attempts as a where a.run_id = tiq_test.rid(1)), 0,
    'the purged run''s attempts are gone'
);
select is(
    (select count(*)::integer from ticketiq.audit_once_keys as k where k.run_id = tiq_test.rid(1)), 0,
    'and its audit_once keys'
);
select results_eq(
    $$select a.run_id, a.target, a.attempts from ticketiq.attempts as a$$,
    $$values (tiq_test.rid(2), 'model'::text, 1)$$,
    'the running run''s attempt stays'
);
select results_eq(
    $$select k.run_id, k.key from ticketiq.audit_once_keys as k$$,
    $$values (tiq_test.rid(2), 'w1'::text)$$,
    'and its key'
);

select * from finish();
rollback;
