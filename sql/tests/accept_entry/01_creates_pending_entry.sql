-- accept_entry: a request is written to the durable inbox as a pending
-- entry keyed by (kind, sender id), received at the database clock, with
-- no run yet but the id it will have (created = true); may_wait defaults to false, durable to true.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

create temp table accepted on commit drop as
select a.*
from ticketiq.accept_entry(
    'a2a', 'task-1', '{"message": "reset my password"}', 'alice@example.com', 'agent:helpdesk', 'a2a', true, false
) as a;

select results_eq(
    $$select a.entry_id is not null, a.created, a.state, a.run_id from accepted as a$$,
    $$values (true, true, 'pending'::text, (select e.planned_run_id from ticketiq.entries as e))$$,
    'returns the new entry: created, pending, the id its run will have'
);
select results_eq(
    $$select e.entry_id, e.kind, e.sender_id, e.payload, e.owner, e.run_as, e.channel, e.may_wait, e.durable
      from ticketiq.entries as e$$,
    $$select a.entry_id, 'a2a'::text, 'task-1'::text, '{"message": "reset my password"}'::jsonb,
             'alice@example.com'::text, 'agent:helpdesk'::text, 'a2a'::text, true, false
      from accepted as a$$,
    'the entry is stored with its kind, sender id, payload, identity and flags'
);
select results_eq(
    $$select e.state, e.run_id, e.received_at, e.started_at, e.finished_at, e.outcome from ticketiq.entries as e$$,
    $$values ('pending'::text, null::uuid, '2030-01-01 00:00:00+00'::timestamptz, null::timestamptz,
              null::timestamptz, null::jsonb)$$,
    'pending, received now, not started, no outcome'
);
select is((select count(*) from ticketiq.runs), 0::bigint, 'no run is started by accepting');
select results_eq(
    $$select o.kind, o.sender_id, o.state, o.run_id from ticketiq.entries_open as o$$,
    $$values ('a2a'::text, 'task-1'::text, 'pending'::text, null::uuid)$$,
    'entries_open shows it pending'
);

select ticketiq.accept_entry('webhook', 'delivery-1', '{}', 'o', 'ra', 'web');
select results_eq(
    $$select e.may_wait, e.durable from ticketiq.entries as e where e.sender_id = 'delivery-1'$$,
    $$values (false, true)$$,
    'may_wait defaults to false and durable to true'
);
select is(
    (
        select count(*)
        from unnest(array['webhook', 'ticket_event', 'teams', 'a2a', 'copilot', 'playground', 'cron']) as k (kind)
        cross join lateral ticketiq.accept_entry(k.kind, 'sender-x', '{}', 'o', 'ra', 'web') as a
        where a.created
    ),
    7::bigint,
    'each of the seven kinds is accepted'
);

select * from finish();
rollback;
