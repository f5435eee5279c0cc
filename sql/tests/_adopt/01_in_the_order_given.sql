-- _adopt: the runs given are adopted (epoch + 1, the lease to the holder
-- for the TTL), returned in the order given, and each audited: its
-- adoption, then its resume's one row, and a resumed event on its stream.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 1, tiq_test.rid(1));
select tiq_test.new_run('p1', 3, tiq_test.rid(2));
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(2));

create temp table adopted on commit drop as
select
    a.*,
    row_number() over () as n
from ticketiq._adopt('w1', interval '8 seconds', array[tiq_test.rid(2), tiq_test.rid(1)]) as a;

select results_eq(
    $$select run_id, epoch from adopted order by n$$,
    $$values (tiq_test.rid(2), 3::bigint), (tiq_test.rid(1), 3::bigint)$$,
    'both, in the order given, each at its epoch + 1'
);
select results_eq(
    $$select r.status::text, r.lease_holder, r.lease_expires_at from ticketiq.runs as r
      where r.run_id in (tiq_test.rid(1), tiq_test.rid(2))$$,
    $$values ('running'::text, 'w1'::text, '2030-01-01 00:00:12+00'::timestamptz),
             ('running'::text, 'w1'::text, '2030-01-01 00:00:12+00'::timestamptz)$$,
    'running, held by w1 for the TTL from the clock'
);
select results_eq(
    $$select a.event::text from ticketiq.audit as a
      where a.run_id = tiq_test.rid(1) and a.epoch = 3 order by a.audit_id$$,
    $$values ('agent.run.adopted'::text), ('agent.run.crash_resumed'::text)$$,
    'its adoption, then its resume''s row'
);
select is(
    (select a.detail from ticketiq.audit as a
     where a.run_id = tiq_test.rid(2) and a.event = 'agent.run.crash_resumed'),
    '{"step": 0, "loss_count": 1, "reason": "lease_lapsed", "settlements": [],
      "complete": true}'::jsonb,
    'the resume row: no settlements yet, complete with no step behind it'
);
select is(
    (select count(*) from ticketiq.run_events as e
     where e.kind = 'resumed' and e.epoch = 3 and e.run_id in (tiq_test.rid(1), tiq_test.rid(2))),
    2::bigint, 'a resumed event on each stream'
);

select * from finish();
rollback;
