-- Migration 0019: a run's event stream (issue 41).
--
--   * ticketiq.run_events: the durable events of a run, in the order they
--     were committed: started, step_written, call_started (a changing call
--     marked in doubt), call_settled (a changing call's outcome or
--     settlement), waiting, suspended, released, resumed, answer, failed,
--     stopped.  Each is written by the function that makes the change, in
--     the same statement, after it has locked the run's row: the run's
--     events are written one transaction at a time, so a reader that reads
--     a run's events after the last id it saw misses none (an id taken
--     while another transaction of the same run is open cannot be lower
--     than that transaction's).  Keyed by (run, id): the one index is the
--     reader's.  Purged with the run's history (ticketiq.purge_history).
--     The model's text as it is generated is not here: it goes live
--     (NOTIFY), and the step's whole text is in its step_written or answer
--     event.
--   * ticketiq.run_events_after(run, after, limit) reads them.

create table ticketiq.run_events (
    run_id uuid not null,
    event_id bigint generated always as identity,
    kind text not null check (
        kind in (
            'started', 'step_written', 'call_started', 'call_settled', 'waiting',
            'suspended', 'released', 'resumed', 'answer', 'failed', 'stopped'
        )
    ),
    step integer,
    epoch bigint,
    body jsonb not null default '{}' check (jsonb_typeof(body) = 'object'),
    at timestamptz not null,
    primary key (run_id, event_id)
);

comment on table ticketiq.run_events is
'A run''s durable events in commit order (issue 41); written only by the functions, under the run''s row lock.';
