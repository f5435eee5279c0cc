-- Migration 0005: room for HOT updates of runs.
--
-- write_checkpoint now updates only runs.last_step (no indexed column), so
-- with free space on the page PostgreSQL can update the row in place
-- (a heap-only tuple) and touch none of the runs indexes.
alter table ticketiq.runs set (fillfactor = 80);

-- claim_entries gains p_min_age_seconds.
drop function if exists ticketiq.claim_entries(text, double precision, integer);
