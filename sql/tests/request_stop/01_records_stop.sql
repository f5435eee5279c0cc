-- request_stop: a person's Stop is recorded, not fenced: for a running run,
-- and for a claimed one whose process died; agent.run.stop_requested audited.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.advance(1);

select results_eq(
    $$select s.run_id, s.status, s.stop_requested_at
      from ticketiq.request_stop(tiq_test.rid(1), 'alice@example.com', 'wrong ticket') as s$$,
    $$values (tiq_test.rid(1), 'running'::text, '2030-01-01 00:00:01+00'::timestamptz)$$,
    'returns the run''s status and when the Stop was asked'
);
select results_eq(
    $$select r.stop_requested_at, r.stop_requested_by, r.status::text, r.epoch::bigint
      from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$values ('2030-01-01 00:00:01+00'::timestamptz, 'alice@example.com'::text, 'running'::text, 1::bigint)$$,
    'recorded on the run, which keeps running until its attempt stops it'
);
select results_eq(
    $$select a.epoch, a.actor, a.detail ->> 'reason'
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.stop_requested'$$,
    $$values (1::bigint, 'alice@example.com'::text, 'wrong ticket'::text)$$,
    'agent.run.stop_requested audited'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.lose(tiq_test.rid(2));
select is(
    (select s.status from ticketiq.request_stop(tiq_test.rid(2), 'bob@example.com') as s), 'claimed',
    'a claimed run (its process died) can be asked to stop'
);
select is(
    (select r.stop_requested_by from ticketiq.runs as r where r.run_id = tiq_test.rid(2)), 'bob@example.com',
    'recorded'
);

select * from finish();
rollback;
