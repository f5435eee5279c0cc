-- Migration 0002: the approval queue and delegation to sub-agents.
--
-- * ticketiq.approval_requests: a write held for approval files one request
--   per call (run, step, call id); filing again coalesces with it, and a
--   person's decision is what a resume reads.
-- * ticketiq.calls.approval_id: the request a held call filed.
-- * ticketiq.runs.parent_run_id: a child run started by a delegation, found
--   again by its delegation key (runs.idempotency_key).
-- * start_run gains p_parent_run_id and adopt_run returns the new type
--   ticketiq.adopted_run: their old signatures are dropped here.

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

alter table ticketiq.calls add column approval_id uuid;

alter table ticketiq.runs add column parent_run_id uuid references ticketiq.runs (run_id);

create index runs_parent_idx on ticketiq.runs (parent_run_id)
where parent_run_id is not null;

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
    answer_handed_on boolean
);

-- adopt_run now returns setof ticketiq.adopted_run.
drop function if exists ticketiq.adopt_run(text, double precision, uuid);

drop function if exists ticketiq.start_run(
    text, text, text, text, text, boolean, double precision, jsonb, text, text, jsonb, uuid
);
