-- Migration 0003: entry points that survive a crash.
--
-- * ticketiq.entries: the durable inbox of every entry point (webhook and
--   ticket-event deliveries, Teams activities, A2A tasks, co-pilot turns,
--   playground runs, cron fires), keyed by the sender's id so a retried
--   request starts no second run.  Its run, state and outcome are recorded
--   once, by the functions that end the run.
-- * ticketiq.cron_schedules: schedules; each due fire becomes one entry.
-- * runs.durable: false for entry-point runs that are not written ahead
--   (TICKETIQ_CRASH_RESUME_ENTRIES=false): lost, they are failed, not resumed.
-- * runs 'suspended': a run that may wait gives its lease up while it waits
--   for wait_key (an approval, a person's reply, a child run) and is woken
--   by that event on whichever process gets it.
-- * runs.claim_reason: why a run is up for adoption (lease_lapsed,
--   released, woken), so a resume is audited as a crash resume only after
--   a loss.
-- * answers.delivery_started_at: a delivery that is confirmed by a reader
--   (a Teams reply) is marked before it is sent.

create table ticketiq.entries (
    entry_id bigint generated always as identity primary key,
    kind text not null check (
        kind in ('webhook', 'ticket_event', 'teams', 'a2a', 'copilot', 'playground', 'cron')
    ),
    sender_id text not null check (sender_id <> ''),
    payload jsonb not null check (jsonb_typeof(payload) = 'object'),
    owner text not null check (owner <> ''),
    run_as text not null check (run_as <> ''),
    channel text not null check (channel <> ''),
    may_wait boolean not null,
    durable boolean not null,
    state text not null default 'pending' check (
        state in ('pending', 'running', 'answered', 'failed', 'stopped')
    ),
    run_id uuid references ticketiq.runs (run_id),
    received_at timestamptz not null,
    started_at timestamptz,
    finished_at timestamptz,
    outcome jsonb,
    unique (kind, sender_id),
    check ((state = 'pending') = (run_id is null))
);

create index entries_pending_idx on ticketiq.entries (received_at)
where state = 'pending';

create index entries_run_idx on ticketiq.entries (run_id);

create table ticketiq.cron_schedules (
    name text primary key check (name <> ''),
    every_seconds double precision not null check (every_seconds > 0),
    next_fire_at timestamptz not null,
    payload jsonb not null default '{}' check (jsonb_typeof(payload) = 'object'),
    owner text not null check (owner <> ''),
    run_as text not null check (run_as <> ''),
    channel text not null check (channel <> ''),
    enabled boolean not null default true
);

create index cron_schedules_due_idx on ticketiq.cron_schedules (next_fire_at)
where enabled;

alter table ticketiq.runs add column durable boolean not null default true;

alter table ticketiq.runs add column wait_key text;

alter table ticketiq.runs add column claim_reason text;

alter table ticketiq.runs drop constraint runs_status_check;

alter table ticketiq.runs add constraint runs_status_check check (
    status in ('running', 'claimed', 'suspended', 'completed', 'failed', 'stopped')
);

alter table ticketiq.runs add constraint runs_check3 check ((status = 'suspended') = (wait_key is not null));

create index runs_wait_key_idx on ticketiq.runs (wait_key)
where status = 'suspended';

alter table ticketiq.answers add column delivery_started_at timestamptz;

create view ticketiq.entries_open as
select
    e.entry_id,
    e.kind,
    e.sender_id,
    e.state,
    e.run_id,
    r.status as run_status,
    r.lease_holder,
    r.lease_expires_at,
    e.received_at,
    e.started_at
from ticketiq.entries as e
left join ticketiq.runs as r on e.run_id = r.run_id
where e.state in ('pending', 'running');

comment on view ticketiq.entries_open is
'Entry-point deliveries not yet answered: pending ones and those whose run is in flight.';

drop function if exists ticketiq.start_run(
    text, text, text, text, text, boolean, double precision, jsonb, text, text, jsonb, uuid, uuid
);
