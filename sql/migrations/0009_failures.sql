-- Migration 0009: failures are not crashes.
--
-- The runner retries a model step or a tool call that failed transiently
-- and counts those attempts durably: ticketiq.record_attempt keeps one row
-- per (run, step, target) in ticketiq.attempts, so a crash in the middle of
-- retrying does not reset the count (a resumed attempt at a later epoch
-- goes on from it).  ticketiq.audit_once writes an audit row at most once
-- per (run, event, key) for the run's whole life; ticketiq.audit_once_keys
-- holds the keys already written, its primary key the once-only rule under
-- races.  Both tables go with their run (on delete cascade), so
-- ticketiq.purge_history takes them with it.  New tables only: no existing
-- row changes.

-- Failed attempts of a model step ('model') or a tool call (its call id)
-- at a step of a run, across every epoch of the run.
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

-- The (run, event, key) of every row ticketiq.audit_once wrote, with that
-- row's audit_id: the primary key makes a second write of the same key
-- impossible, whichever session tries it.
create table ticketiq.audit_once_keys (
    run_id uuid references ticketiq.runs (run_id) on delete cascade,
    event text check (event <> ''),
    key text check (key <> ''),
    audit_id bigint not null,
    primary key (run_id, event, key)
);

comment on table ticketiq.audit_once_keys is
'Keys of the audit rows written once per run by ticketiq.audit_once, with the audit row written.';

insert into ticketiq.schema_migrations (version, name) values (9, 'failures');
