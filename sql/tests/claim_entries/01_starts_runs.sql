-- claim_entries: pending entries are claimed oldest first and each one's
-- run is started in the same statement, held by the holder: idempotency
-- key <kind>:<sender id>, entry point = kind, input = the payload, meta
-- {entry_id}; the entry is running with its run.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.accept_entry('webhook', 'delivery-7', '{"ticket": 7}', 'alice@example.com', 'agent:triage', 'web');
select tiq_test.advance(1);
select ticketiq.accept_entry(
    'a2a', 'task-1', '{"message": "hi"}', 'bob@example.com', 'agent:helpdesk', 'a2a', true
);
select tiq_test.advance(1);

create temp table claimed on commit drop as
select c.* from ticketiq.claim_entries('p1', 30) as c;

select results_eq(
    $$select c.kind, c.sender_id, c.payload, c.epoch, c.owner, c.run_as, c.channel, c.may_wait, c.durable,
             c.correlation_id = c.run_id::text
      from claimed as c order by c.entry_id$$,
    $$values ('webhook'::text, 'delivery-7'::text, '{"ticket": 7}'::jsonb, 1::bigint, 'alice@example.com'::text,
              'agent:triage'::text, 'web'::text, false, true, true),
             ('a2a', 'task-1', '{"message": "hi"}', 1, 'bob@example.com', 'agent:helpdesk', 'a2a', true, true,
              true)$$,
    'returns both entries, oldest first, each with its run at epoch 1'
);
select results_eq(
    $$select r.status::text, r.lease_holder, r.lease_expires_at, r.epoch::bigint,
        r.idempotency_key = 'entry:' || c.entry_id,
        r.entry_point::text, r.input,
             r.meta::jsonb = jsonb_build_object('entry_id', c.entry_id), r.owner::text, r.channel::text, r.may_wait
      from claimed as c inner join ticketiq.runs as r on c.run_id = r.run_id order by c.entry_id$$,
    $$values ('running'::text, 'p1'::text, '2030-01-01 00:00:32+00'::timestamptz, 1::bigint,
              true, 'webhook'::text, '{"ticket": 7}'::jsonb, true, 'alice@example.com'::text,
              'web'::text, false),
             ('running', 'p1', '2030-01-01 00:00:32+00', 1, true, 'a2a', '{"message": "hi"}', true,
              'bob@example.com', 'a2a', true)$$,
    'each run is running, held by p1, keyed entry:<entry id>, its input the payload'
);
select results_eq(
    $$select e.state, e.run_id = c.run_id, e.started_at
      from ticketiq.entries as e inner join claimed as c on e.entry_id = c.entry_id order by e.entry_id$$,
    $$values ('running'::text, true, '2030-01-01 00:00:02+00'::timestamptz),
             ('running', true, '2030-01-01 00:00:02+00')$$,
    'each entry is running with its run, started now'
);
select is(
    (
        select count(*) from ticketiq.audit as a
        where a.event = 'agent.run.started' and a.run_id in (select c.run_id from claimed as c)
    ),
    2::bigint,
    'each start is audited'
);
select results_eq(
    $$select o.sender_id, o.state, o.run_status, o.lease_holder from ticketiq.entries_open as o order by o.entry_id$$,
    $$values ('delivery-7'::text, 'running'::text, 'running'::text, 'p1'::text),
             ('task-1', 'running', 'running', 'p1')$$,
    'entries_open shows them in flight with their holder'
);
select is((select count(*) from ticketiq.runs_in_flight), 2::bigint, 'the runs are in flight');

select * from finish();
rollback;
