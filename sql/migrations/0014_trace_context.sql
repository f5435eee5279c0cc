-- Migration 0014: the trace context a run's entry arrived with (W3C traceparent).
--
-- A request that starts a run (POST /runs, a webhook, ...) with a W3C traceparent
-- header has it recorded by ticketiq.record_trace_context, keyed by the entry it is
-- written as (kind, sender id), before the entry is accepted: every process that
-- drives the run, first or after a loss, reads it with ticketiq.run_trace_context
-- and makes the run's spans children of that context, so the caller's trace holds
-- the run across a crash.  Keyed by the entry rather than the run: the run id is
-- drawn when the entry is accepted, after the header is recorded.
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

insert into ticketiq.schema_migrations (version, name) values (14, 'trace_context');
