-- Migration 0004: background jobs.
--
-- * ticketiq.jobs: source syncs, fine-tuning, classifier training and
--   red-team runs, claimed by any process's job worker.  A running job's
--   lease lives on its row (holder/lease_expires_at), fenced by epoch like
--   a run's.  A job whose lease lapses is queued again with its progress
--   kept when it is resumable, and failed 'interrupted: ...' otherwise
--   (ticketiq.sweep_jobs).  idempotency_key makes a repeated enqueue find
--   the existing job.
-- * ticketiq.jobs_open: the operator view of queued and running jobs.

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
