-- Migration 0015: durable waits of workflow runs (issue 29).
--
-- A workflow run is a run (same lease, epochs, checkpoints, sweep and loss
-- counting); only its waits differ from an agent run's.  A timer (sleep
-- until a time, or a signal's timeout) is a row that fires once, by the
-- database clock, on whichever process calls ticketiq.fire_due_timers; a
-- signal is a row delivered once per sender key through the front and
-- consumed once, by the step that waits for it (ticketiq.wait_run).  A
-- waiting workflow is suspended: no lease, no process holds it.
create table ticketiq.workflow_timers (
    run_id uuid not null references ticketiq.runs (run_id) on delete cascade,
    timer_key text not null check (timer_key <> ''),
    wait_key text not null check (wait_key <> ''),
    due_at timestamptz not null,
    set_at timestamptz not null,
    state text not null default 'set' check (state in ('set', 'fired', 'cancelled')),
    fired_at timestamptz,
    primary key (run_id, timer_key),
    check ((state = 'set') = (fired_at is null))
);

comment on table ticketiq.workflow_timers is
'Durable timers of workflow runs: a sleep, or a signal''s timeout; each fires once (state set -> fired).';

create index workflow_timers_due_idx on ticketiq.workflow_timers (due_at)
where state = 'set';

create table ticketiq.workflow_signals (
    signal_id bigint generated always as identity primary key,
    run_id uuid not null references ticketiq.runs (run_id) on delete cascade,
    name text not null check (name <> ''),
    sender_key text not null check (sender_key <> ''),
    payload jsonb not null,
    sent_at timestamptz not null,
    sent_by text,
    consumed_at timestamptz,
    consumed_by text,
    unique (run_id, name, sender_key),
    check ((consumed_at is null) = (consumed_by is null))
);

comment on table ticketiq.workflow_signals is
'Signals sent to workflow runs: delivered once per sender key, consumed once by the waiting step (its step key).';

create index workflow_signals_pending_idx on ticketiq.workflow_signals (run_id, name, signal_id)
where consumed_at is null;

create unique index workflow_signals_consumer_idx on ticketiq.workflow_signals (run_id, consumed_by)
where consumed_by is not null;

insert into ticketiq.schema_migrations (version, name) values (15, 'workflows');
