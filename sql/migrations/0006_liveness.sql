-- Migration 0006: liveness tokens.
--
-- Each app process holds a session-level advisory lock, its liveness token,
-- on a dedicated connection (ticketiq.hold_liveness).  When that session
-- ends while a watcher's own session stays up, ticketiq.watch_processes
-- claims the process's runs at once through the same once-only claim as the
-- sweep; the lease stays the fence and the fallback.
alter table ticketiq.processes
add column liveness_key integer,
add column liveness_backend_pid integer,
add column liveness_since timestamptz,
add column ended_reason text;

-- A fresh key per hold: a reconnecting process never waits for its old
-- session's lock to go.
create sequence ticketiq.liveness_keys as integer minvalue 1 cycle;

-- ticketiq.purge_history finds finished runs by age through this index, not
-- by reading every run.
create index runs_finished_idx on ticketiq.runs (finished_at)
where finished_at is not null;

-- _claim_lapsed gains p_holder (claim a dead process's runs before expiry).
drop function if exists ticketiq._claim_lapsed(text, integer, integer, uuid, jsonb);

insert into ticketiq.schema_migrations (version, name) values (6, 'liveness');
