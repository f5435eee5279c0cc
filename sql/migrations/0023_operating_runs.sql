-- Migration 0023: operating runs (issue 42): a list of runs an operator pages
-- through, a restart by a person's decision and a fork from a step.
--
--   * runs_created_idx and runs_owner_created_idx: ticketiq.list_runs pages
--     through runs newest first by the keyset (created_at, run_id), every
--     owner's (an admin) or one owner's, one index range scan a page,
--     whatever the number of runs kept.  Both index columns no statement
--     changes after the run's insert, so a checkpoint's update of the row
--     stays HOT.  runs.owner is limited to 512 characters by
--     ticketiq.start_run (no CHECK on runs: every CHECK of runs costs each
--     checkpoint's update of the row, migration 8).
--   * No table changes otherwise: a restart and a fork are recorded on the
--     run (claim_reason 'restarted' or 'forked'; a fork's meta.forked_from
--     names its source run and step) and in the audit.
create index runs_created_idx on ticketiq.runs (created_at, run_id);

comment on index ticketiq.runs_created_idx is
'ticketiq.list_runs pages through every owner''s runs newest first by this keyset (created_at, run_id).';

create index runs_owner_created_idx on ticketiq.runs (owner, created_at, run_id);

comment on index ticketiq.runs_owner_created_idx is
'ticketiq.list_runs pages through one owner''s runs newest first by this keyset (owner, created_at, run_id).';

insert into ticketiq.schema_migrations (version, name) values (23, 'operating_runs');
