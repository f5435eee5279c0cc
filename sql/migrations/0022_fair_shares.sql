-- Migration 0022: runs waiting to start are started by priority, then
-- fairly between owners (issue 43, item 3).
--
--   * entries.priority: -1000..1000, higher first (POST /runs "priority").
--   * entries_pending_owner_idx: the pending entries of each owner by
--     priority, then in the order they came: ticketiq.claim_entries takes each owner's first
--     before any owner's second, so one owner's backlog delays another
--     owner's single run by one turn at most.
--   * ticketiq.accept_entry takes the priority, ticketiq.claim_entries a
--     per-owner limit of runs in flight (their old signatures go).

alter table ticketiq.entries add column priority smallint not null default 0
check (priority between -1000 and 1000);

create index entries_pending_owner_idx on ticketiq.entries (owner, priority desc, received_at)
where state = 'pending';

drop function if exists ticketiq.accept_entry(text, text, jsonb, text, text, text, boolean, boolean);
drop function if exists ticketiq.claim_entries(text, double precision, integer, double precision);
