-- audit_once: the first call writes one audit row (the event, the run, the
-- epoch, the lease holder as actor, the detail with "key" added) and
-- returns its audit_id with inserted = true; a second call with the same
-- (run, event, key) writes nothing and returns the first row's audit_id
-- with inserted = false, whatever its detail.  Another key, another event
-- or another run is audited on its own.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 60, tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2));
select tiq_test.advance(1);

create temp table first_write on commit drop as
select o.*
from ticketiq.audit_once(
    tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w1', '{"reason": "no step key", "tool": "jira"}'
) as o;

select is((select f.inserted from first_write as f), true, 'the first call inserts');
select results_eq(
    $$select a.at, a.event, a.run_id, a.epoch, a.actor, a.detail
      from ticketiq.audit as a where a.audit_id = (select f.audit_id from first_write as f)$$,
    $$values ('2030-01-01 00:00:01+00'::timestamptz, 'agent.run.guarantee_downgraded'::text, tiq_test.rid(1),
              1::bigint, 'p1'::text, '{"key": "w1", "reason": "no step key", "tool": "jira"}'::jsonb)$$,
    'its audit row: event, run, epoch, actor, the detail with the key added, the database clock'
);

select tiq_test.advance(1);
select tiq_test.save_fingerprint();
select results_eq(
    $$select o.audit_id, o.inserted
      from ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w1', '{"reason": "other"}')
          as o$$,
    $$select f.audit_id, false from first_write as f$$,
    'the same (run, event, key) again returns the first audit_id, inserted false'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and writes nothing');

select is(
    (
        select o.inserted
        from ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w2', '{}') as o
    ),
    true,
    'another key of the same event is audited'
);
select is(
    (select o.inserted from ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.not_read_back', 'w1', '{}') as o),
    true,
    'the same key under another event is audited'
);
select is(
    (
        select o.inserted
        from ticketiq.audit_once(tiq_test.rid(2), 1, 'agent.run.guarantee_downgraded', 'w1', '{}') as o
    ),
    true,
    'the same event and key of another run is audited'
);
select results_eq(
    $$select a.run_id, a.event, a.detail ->> 'key' from ticketiq.audit as a
      where a.event <> 'agent.run.started' order by a.audit_id$$,
    $$values (tiq_test.rid(1), 'agent.run.guarantee_downgraded'::text, 'w1'::text),
             (tiq_test.rid(1), 'agent.run.guarantee_downgraded', 'w2'),
             (tiq_test.rid(1), 'agent.run.not_read_back', 'w1'),
             (tiq_test.rid(2), 'agent.run.guarantee_downgraded', 'w1')$$,
    'one audit row per (run, event, key)'
);
select results_eq(
    $$select k.run_id, k.event, k.key, k.audit_id from ticketiq.audit_once_keys as k order by k.audit_id$$,
    $$select a.run_id, a.event, a.detail ->> 'key', a.audit_id from ticketiq.audit as a
      where a.event <> 'agent.run.started' order by a.audit_id$$,
    'each key is kept with the audit row it wrote'
);

select * from finish();
rollback;
