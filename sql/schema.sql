-- ticketiq-pg: fresh install of the schema at its current version.
--
-- This file creates every table, index and view of schema `ticketiq` as the
-- latest migration leaves them.  An existing database is instead brought
-- forward by `sql/migrations/NNNN_*.sql`; `tests/test_migrations.py` proves
-- that both paths give the same schema.  Functions live one per file in
-- `sql/functions/` and are (re)installed after this file or the migrations;
-- roles and grants come last from `sql/grants.sql`.

create schema if not exists ticketiq;

comment on schema ticketiq is
'Crash-resume core: runs, leases, write-ahead checkpoints, calls in doubt, sealed answers, audit.';

-- Versions applied to this database; ticketiq.schema_version() reports max(version).
create table ticketiq.schema_migrations (
    version integer primary key,
    name text not null,
    applied_at timestamptz not null default clock_timestamp()
);

insert into ticketiq.schema_migrations (version, name) values
(1, 'core'),
(2, 'approvals_delegation'),
(3, 'entry_points'),
(4, 'jobs'),
(5, 'fast_steps'),
(6, 'liveness'),
(7, 'group_commit'),
(8, 'lean_steps'),
(9, 'failures'),
(10, 'hardening'),
(11, 'front_auth'),
(12, 'chained_seals'),
(13, 'front_owners'),
(14, 'trace_context'),
(15, 'workflows'),
(16, 'resume_audit_lookup');

-- One-row settings table.  fake_clock_allowed lets the setting
-- ticketiq.fake_now move the database clock; only test databases turn it on.
create table ticketiq.config (
    id boolean primary key default true check (id),
    fake_clock_allowed boolean not null default false
);

insert into ticketiq.config (id) values (true);

-- App processes that hold leases.
create table ticketiq.processes (
    process_id text primary key check (process_id <> ''),
    host text,
    os_pid integer,
    backend_pid integer,
    started_at timestamptz not null,
    last_seen_at timestamptz not null,
    stopped_at timestamptz,
    -- The liveness token: a session-level advisory lock
    -- (classid 29809, objid liveness_key) held by liveness_backend_pid.
    liveness_key integer,
    liveness_backend_pid integer,
    liveness_since timestamptz,
    ended_reason text
);

-- A fresh key per hold: a reconnecting process never waits for its old
-- session's lock to go.
create sequence ticketiq.liveness_keys as integer minvalue 1 cycle;

-- Column rules as domains: a domain's check runs only where a value is
-- assigned to the column (a CHECK constraint of the table runs on every
-- update of the row, read back from its text once per statement).
create domain ticketiq.nonempty_text as text check (value <> '');

comment on domain ticketiq.nonempty_text is 'Text that is not empty.';

create domain ticketiq.json_object as jsonb check (jsonb_typeof(value) = 'object');

comment on domain ticketiq.json_object is 'A JSON object.';

create domain ticketiq.run_status as text check (
    value in ('running', 'claimed', 'suspended', 'completed', 'failed', 'stopped')
);

comment on domain ticketiq.run_status is 'The state of a run.';

create domain ticketiq.epoch_number as bigint check (value >= 1);

comment on domain ticketiq.epoch_number is 'An epoch: 1 for the first attempt, one more per claim.';

create domain ticketiq.step_number as integer check (value >= 1);

comment on domain ticketiq.step_number is 'A model step of a run, from 1.';

create domain ticketiq.count_number as integer check (value >= 0);

comment on domain ticketiq.count_number is 'A count, or a step where 0 means none yet.';

-- One agent run.  Its lease `checkpoint:<run id>` lives on the row:
-- lease_holder/lease_expires_at, fenced by epoch.
create table ticketiq.runs (
    run_id uuid primary key,
    owner ticketiq.nonempty_text not null,
    run_as ticketiq.nonempty_text not null,
    channel ticketiq.nonempty_text not null,
    entry_point ticketiq.nonempty_text not null,
    may_wait boolean not null default false,
    correlation_id ticketiq.nonempty_text not null,
    idempotency_key text unique,
    input jsonb not null default '{}',
    meta ticketiq.json_object not null default '{}',
    status ticketiq.run_status not null default 'running',
    epoch ticketiq.epoch_number not null default 1,
    lease_holder text,
    lease_expires_at timestamptz,
    loss_count ticketiq.count_number not null default 0,
    last_step ticketiq.count_number not null default 0,
    stop_requested_at timestamptz,
    stop_requested_by text,
    failure_reason text,
    created_at timestamptz not null,
    updated_at timestamptz not null,
    finished_at timestamptz,
    parent_run_id uuid references ticketiq.runs (run_id),
    durable boolean not null default true,
    wait_key text,
    claim_reason text,
    check ((status = 'running') = (lease_holder is not null)),
    check ((lease_holder is null) = (lease_expires_at is null)),
    check ((status in ('completed', 'failed', 'stopped')) = (finished_at is not null)),
    constraint runs_check3 check ((status = 'suspended') = (wait_key is not null))
)
-- Room for HOT updates: a checkpoint write changes no indexed column.
with (fillfactor = 80);

-- The sweep reads only leased runs: the index holds running runs alone, so
-- its size (and the sweep's cost) does not grow with finished runs kept.
create index runs_running_lease_idx on ticketiq.runs (lease_expires_at)
where status = 'running';

create index runs_parent_idx on ticketiq.runs (parent_run_id)
where parent_run_id is not null;

create index runs_wait_key_idx on ticketiq.runs (wait_key)
where status = 'suspended';

-- Renewal finds a process's runs through this index.
create index runs_holder_idx on ticketiq.runs (lease_holder)
where status = 'running';

-- Adoption picks claimed runs oldest first.
create index runs_claimed_idx on ticketiq.runs (updated_at)
where status = 'claimed';

-- Retention (ticketiq.purge_history) finds finished runs by age.
create index runs_finished_idx on ticketiq.runs (finished_at)
where finished_at is not null;

-- One write-ahead checkpoint per model step, written once.
create table ticketiq.checkpoints (
    run_id uuid not null references ticketiq.runs (run_id),
    step ticketiq.step_number not null,
    epoch bigint not null,
    body jsonb not null,
    seal ticketiq.nonempty_text not null,
    seal_key_id ticketiq.nonempty_text not null,
    written_at timestamptz not null,
    primary key (run_id, step)
);

-- lz4 where the server has it: several times cheaper to compress than pglz.
do $$
begin
    if exists (
        select 1 from pg_catalog.pg_settings as s
        where s.name = 'default_toast_compression' and 'lz4' = any(s.enumvals)
    ) then
        alter table ticketiq.checkpoints alter column body set compression lz4;
    end if;
end;
$$;

-- The calls a step asked for.  classification is what the step recorded;
-- marked_classification what the in-doubt mark recorded, and it decides
-- the settlement on resume, whatever the tool is classified as by then.
create table ticketiq.calls (
    run_id uuid not null,
    step integer not null,
    call_id text not null,
    ordinal integer not null,
    tool text not null,
    arguments jsonb not null,
    classification text not null check (
        classification in ('read', 'write', 'delegation', 'remote_agent', 'subagent_with_tools')
    ),
    step_key text,
    state text not null default 'pending' check (
        state in ('pending', 'in_doubt', 'done', 'settled')
    ),
    marked_classification text check (
        marked_classification in ('write', 'delegation', 'remote_agent', 'subagent_with_tools')
    ),
    marked_at timestamptz,
    marked_epoch bigint,
    outcome jsonb,
    settlement text check (
        settlement in (
            'made', 'redone', 'coalesced', 'read_decision', 'resent_same_key',
            'asked_again', 'read_back', 'unknown', 'skipped'
        )
    ),
    finished_at timestamptz,
    finished_epoch bigint,
    approval_id uuid,
    -- The seal of the row's state, made by the runner with the key seal_key_id
    -- names (ticketiq_pg.seal.call_fields): a resume acts on no state it
    -- cannot verify.  Null on a row written before schema 12.
    seal text,
    seal_key_id text,
    primary key (run_id, step, call_id),
    foreign key (run_id, step) references ticketiq.checkpoints (run_id, step),
    check ((state = 'in_doubt') <= (marked_at is not null)),
    check ((state in ('done', 'settled')) = (finished_at is not null))
);

-- Operators look for calls in doubt.
create index calls_in_doubt_idx on ticketiq.calls (marked_at)
where state = 'in_doubt';

-- A write held for approval files one request per call; filing again
-- coalesces with it, and a person's decision is what a resume reads.
create table ticketiq.approval_requests (
    approval_id uuid primary key,
    run_id uuid not null references ticketiq.runs (run_id),
    step integer not null,
    call_id text not null,
    tool text not null,
    arguments jsonb not null,
    summary jsonb not null default '{}',
    state text not null default 'waiting' check (state in ('waiting', 'approved', 'rejected')),
    requested_at timestamptz not null,
    requested_epoch bigint not null,
    decided_at timestamptz,
    decided_by text,
    reason text,
    unique (run_id, step, call_id),
    foreign key (run_id, step, call_id) references ticketiq.calls (run_id, step, call_id),
    check ((state = 'waiting') = (decided_at is null))
);

create index approval_requests_waiting_idx on ticketiq.approval_requests (requested_at)
where state = 'waiting';

-- A finished run's sealed answer: write-once (trigger answers_write_once),
-- kept until retain_until, handed on at most once.
create table ticketiq.answers (
    run_id uuid primary key references ticketiq.runs (run_id),
    step integer not null,
    epoch bigint not null,
    body jsonb not null,
    seal text not null check (seal <> ''),
    seal_key_id text not null check (seal_key_id <> ''),
    sealed_at timestamptz not null,
    retain_until timestamptz not null,
    handed_on_at timestamptz,
    handed_on_epoch bigint,
    delivery_started_at timestamptz,
    check (retain_until >= sealed_at)
);

-- Retention (ticketiq.purge_answers) finds the answers past retain_until.
create index answers_retain_until_idx on ticketiq.answers (retain_until);

-- The durable inbox of every entry point, keyed by the sender's id.
create table ticketiq.entries (
    entry_id bigint generated always as identity primary key,
    -- Kinds are the app's (ticketiq.accept_entry documents the limit).
    kind text not null constraint entries_kind_check check (kind ~ '^[a-z][a-z0-9_.-]{0,63}$'),
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
    check ((state = 'pending') = (run_id is null)),
    -- The id its run will have, known when the entry is accepted.
    planned_run_id uuid not null default gen_random_uuid()
    constraint entries_planned_run_id_key unique,
    -- Sender ids are the owner's own: two owners' same id are two entries.
    constraint entries_kind_owner_sender_id_key unique (kind, owner, sender_id)
);

create index entries_pending_idx on ticketiq.entries (received_at)
where state = 'pending';

create index entries_run_idx on ticketiq.entries (run_id);

-- The front's API keys: only a SHA-256 hash of each secret is stored.
create table ticketiq.api_keys (
    key_id text primary key check (key_id ~ '^[A-Za-z0-9]{8,64}$'),
    key_hash bytea not null check (length(key_hash) = 32),
    identity text not null check (length(identity) between 1 and 512),
    run_as text[] not null default '{}',
    scopes text[] not null default '{}',
    created_at timestamptz not null,
    revoked_at timestamptz,
    last_used_at timestamptz
);

comment on table ticketiq.api_keys is
'The front''s API keys: a SHA-256 hash of each secret, the identity it proves, what it may run as, its scopes.';

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

-- Where answers and failures land for a person to read.
create table ticketiq.transcript_entries (
    entry_id bigint generated always as identity primary key,
    run_id uuid not null references ticketiq.runs (run_id),
    kind text not null check (kind in ('step', 'answer', 'failed', 'stopped', 'resumed', 'note')),
    body jsonb not null default '{}',
    at timestamptz not null
);

create index transcript_entries_run_idx on ticketiq.transcript_entries (run_id, entry_id);

-- Audit trail written only by the functions.
create table ticketiq.audit (
    audit_id bigint generated always as identity primary key,
    at timestamptz not null,
    event text not null check (event <> ''),
    run_id uuid,
    epoch bigint,
    actor text,
    detail jsonb not null default '{}' check (jsonb_typeof(detail) = 'object')
);

create index audit_run_idx on ticketiq.audit (run_id, audit_id);

create index audit_event_idx on ticketiq.audit (event, audit_id);

-- Exactly one resume row (crash_resumed or resumed) per run and adopting epoch;
-- record_resume finds it by this index, one probe whatever the statistics say.
create unique index audit_one_resume_per_epoch_idx on ticketiq.audit (run_id, epoch)
where event in ('agent.run.crash_resumed', 'agent.run.resumed');

-- The (run, event, key) of every row ticketiq.audit_once wrote, with that
-- row's audit_id: the primary key makes a second write of the same key
-- impossible, whichever session tries it.  It goes with its run.
create table ticketiq.audit_once_keys (
    run_id uuid references ticketiq.runs (run_id) on delete cascade,
    event text check (event <> ''),
    key text check (key <> ''),
    audit_id bigint not null,
    primary key (run_id, event, key)
);

comment on table ticketiq.audit_once_keys is
'Keys of the audit rows written once per run by ticketiq.audit_once, with the audit row written.';

-- Failed attempts of a model step ('model') or a tool call (its call id)
-- at a step of a run, counted across every epoch of the run
-- (ticketiq.record_attempt).  They go with their run.
create table ticketiq.attempts (
    run_id uuid references ticketiq.runs (run_id) on delete cascade,
    step integer check (step >= 1),
    target text check (target <> ''),
    attempts integer not null check (attempts >= 1),
    last_error text not null check (last_error <> ''),
    first_at timestamptz not null,
    last_at timestamptz not null,
    primary key (run_id, step, target),
    check (last_at >= first_at)
);

comment on table ticketiq.attempts is
'Failed attempts per run, step and target (''model'' or a tool call id), counted across epochs.';

-- Named leases that are not runs' leases (the sweep leader).
create table ticketiq.leader_leases (
    name text primary key check (name <> ''),
    holder text not null,
    epoch bigint not null check (epoch >= 1),
    acquired_at timestamptz not null,
    expires_at timestamptz not null
);

-- Background jobs (source syncs, fine-tuning, classifier training, red-team
-- runs).  A running job's lease lives on its row, fenced by epoch; a lapsed
-- resumable job is queued again with its progress, any other is failed.
create table ticketiq.jobs (
    job_id uuid primary key,
    kind text not null check (kind <> ''),
    resumable boolean not null,
    payload jsonb not null default '{}' check (jsonb_typeof(payload) = 'object'),
    state text not null default 'queued' check (state in ('queued', 'running', 'completed', 'failed')),
    progress jsonb not null default '{}' check (jsonb_typeof(progress) = 'object'),
    result jsonb,
    epoch bigint not null default 0 check (epoch >= 0),
    holder text check (holder <> ''),
    lease_expires_at timestamptz,
    attempts integer not null default 0 check (attempts >= 0),
    idempotency_key text unique check (idempotency_key <> ''),
    failure_reason text check (failure_reason <> ''),
    created_at timestamptz not null,
    updated_at timestamptz not null,
    finished_at timestamptz,
    check ((state = 'running') = (holder is not null)),
    check ((state = 'running') = (lease_expires_at is not null)),
    check ((state in ('completed', 'failed')) = (finished_at is not null)),
    check ((state = 'completed') = (result is not null)),
    check ((state = 'failed') = (failure_reason is not null))
);

-- The sweep reads only running jobs' lease expiries.
create index jobs_running_lease_idx on ticketiq.jobs (lease_expires_at)
where state = 'running';

-- Job workers claim queued jobs oldest first.
create index jobs_queued_idx on ticketiq.jobs (created_at)
where state = 'queued';

-- What ticketiq.adopt_run and ticketiq.take_over_child return: a run to
-- resume, with its last checkpoint, the state of that step's calls and any
-- sealed answer.
create type ticketiq.adopted_run as (
    run_id uuid,
    epoch bigint,
    lease_expires_at timestamptz,
    loss_count integer,
    last_step integer,
    owner text,
    run_as text,
    channel text,
    entry_point text,
    may_wait boolean,
    correlation_id text,
    input jsonb,
    meta jsonb,
    stop_requested boolean,
    checkpoint_body jsonb,
    checkpoint_seal text,
    checkpoint_seal_key_id text,
    calls jsonb,
    answer_body jsonb,
    answer_seal text,
    answer_seal_key_id text,
    answer_handed_on boolean,
    checkpoint_chain jsonb
);

-- Operator views (read-only role ticketiq_operator).  Columns held by a
-- domain are shown as their base type.

create view ticketiq.runs_in_flight as
select
    r.run_id,
    'checkpoint:' || r.run_id::text as lease_name,
    r.status::text as status,
    r.lease_holder,
    r.lease_expires_at,
    r.epoch::bigint as epoch,
    r.loss_count::integer as loss_count,
    r.last_step::integer as last_step,
    r.owner::text as owner,
    r.channel::text as channel,
    r.entry_point::text as entry_point,
    r.created_at,
    r.updated_at
from ticketiq.runs as r
where r.status in ('running', 'claimed');

comment on view ticketiq.runs_in_flight is
'Runs that are running or claimed for resumption, with their lease holder and expiry.';

create view ticketiq.calls_in_doubt as
select
    c.run_id,
    c.step,
    c.call_id,
    c.tool,
    c.marked_classification,
    c.step_key,
    c.marked_at,
    c.marked_epoch,
    r.status::text as run_status,
    r.lease_holder
from ticketiq.calls as c
inner join ticketiq.runs as r on c.run_id = r.run_id
where c.state = 'in_doubt';

comment on view ticketiq.calls_in_doubt is
'Changing calls marked in doubt whose outcome is not yet recorded or settled.';

create view ticketiq.resume_audit as
select
    a.audit_id,
    a.at,
    a.run_id,
    a.epoch,
    a.actor,
    (a.detail ->> 'step')::integer as step,
    (a.detail ->> 'loss_count')::integer as loss_count,
    a.detail -> 'settlements' as settlements
from ticketiq.audit as a
where a.event = 'agent.run.crash_resumed';

comment on view ticketiq.resume_audit is
'One row per crash resume: the step, how often the run was lost, how each call it left was settled.';

create view ticketiq.approvals_waiting as
select
    a.approval_id,
    a.run_id,
    a.step,
    a.call_id,
    a.tool,
    a.arguments,
    a.summary,
    a.requested_at
from ticketiq.approval_requests as a
where a.state = 'waiting';

comment on view ticketiq.approvals_waiting is
'Writes held for approval that no person has decided yet.';

create view ticketiq.entries_open as
select
    e.entry_id,
    e.kind,
    e.sender_id,
    e.state,
    e.run_id,
    r.status::text as run_status,
    r.lease_holder,
    r.lease_expires_at,
    e.received_at,
    e.started_at
from ticketiq.entries as e
left join ticketiq.runs as r on e.run_id = r.run_id
where e.state in ('pending', 'running');

comment on view ticketiq.entries_open is
'Entry-point deliveries not yet answered: pending ones and those whose run is in flight.';

create view ticketiq.jobs_open as
select
    j.job_id,
    j.kind,
    j.resumable,
    j.state,
    j.epoch,
    j.holder,
    j.lease_expires_at,
    j.attempts,
    j.progress,
    j.created_at,
    j.updated_at
from ticketiq.jobs as j
where j.state in ('queued', 'running');

comment on view ticketiq.jobs_open is
'Background jobs queued or running, with their holder, lease expiry, attempts lost and progress.';

-- The W3C traceparent a run's entry arrived with (migration 0014): keyed by the
-- entry (kind, sender id), recorded before the entry is accepted.
create table ticketiq.trace_contexts (
    kind text not null,
    sender_id text not null,
    traceparent text not null
    check (traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'),
    recorded_at timestamptz not null,
    primary key (kind, sender_id)
);

comment on table ticketiq.trace_contexts is
'The W3C traceparent a run''s entry arrived with, by the entry''s (kind, sender id): its spans are children of it.';

-- Durable waits of workflow runs (schema 15): timers that fire once, signals consumed once.
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
