-- ticketiq-pg: the comments on tables, columns, indexes and types.
--
-- The tables are written once, by sql/migrations/; this file documents them
-- as the newest migration leaves them, in the catalog (psql: \dt+, \d+,
-- \di+), and the installer applies it after the migrations on every
-- install, fresh or upgrade (ticketiq_pg/db/migrate.py).  docs/schema.sql,
-- generated from a database built this way, shows each comment beside its
-- table.  A migration that drops or renames something commented here
-- changes this file with it.  The views, the domains, the schema and the
-- tables added since migration 9 have their comments in the migration that
-- creates them; the views show the columns held by a domain as its base type.

comment on table ticketiq.schema_migrations is
'Versions applied to this database; ticketiq.schema_version() reports max(version).';

comment on table ticketiq.config is
'One-row settings table.';

comment on column ticketiq.config.fake_clock_allowed is
'Lets the setting ticketiq.fake_now move the database clock; only test databases turn it on.';

comment on table ticketiq.processes is
'App processes that hold leases.';

comment on column ticketiq.processes.liveness_key is
'The liveness token: a session-level advisory lock (classid 29809, objid liveness_key) held by liveness_backend_pid.';

comment on sequence ticketiq.liveness_keys is
'A fresh key per hold: a reconnecting process never waits for its old session''s lock to go.';

comment on table ticketiq.runs is
'One agent run.  Its lease checkpoint:<run id> lives on the row: lease_holder/lease_expires_at, fenced by epoch.  '
'fillfactor 80 leaves room for HOT updates (a checkpoint write changes no indexed column).  '
'Column rules are domains: a domain''s check runs only where a value is assigned to the column '
'(a CHECK constraint of the table runs on every update of the row, read back from its text once per statement).';

comment on index ticketiq.runs_running_lease_idx is
'The sweep reads only leased runs: the index holds running runs alone, '
'so its size (and the sweep''s cost) does not grow with finished runs kept.';

comment on index ticketiq.runs_holder_idx is
'Renewal finds a process''s runs through this index.';

comment on index ticketiq.runs_claimed_idx is
'Adoption picks claimed runs oldest first.';

comment on index ticketiq.runs_finished_idx is
'Retention (ticketiq.purge_history) finds finished runs by age.';

comment on table ticketiq.checkpoints is
'One write-ahead checkpoint per model step, written once.';

comment on column ticketiq.checkpoints.body is
'Compressed with lz4 where the server has it: several times cheaper to compress than pglz.';

comment on table ticketiq.calls is
'The calls a step asked for.  classification is what the step recorded; marked_classification what the '
'in-doubt mark recorded, and it decides the settlement on resume, whatever the tool is classified as by then.';

comment on column ticketiq.calls.seal is
'The seal of the row''s state, made by the runner with the key seal_key_id names '
'(ticketiq_pg.seal.call_fields): a resume acts on no state it cannot verify.  '
'Null on a row written before schema 12.';

comment on index ticketiq.calls_in_doubt_idx is
'Operators look for calls in doubt.';

comment on table ticketiq.approval_requests is
'A write held for approval files one request per call; filing again coalesces with it, '
'and a person''s decision is what a resume reads.';

comment on table ticketiq.answers is
'A finished run''s sealed answer: write-once (trigger answers_write_once), kept until retain_until, '
'handed on at most once.';

comment on index ticketiq.answers_retain_until_idx is
'Retention (ticketiq.purge_answers) finds the answers past retain_until.';

comment on table ticketiq.entries is
'The durable inbox of every entry point, keyed by the sender''s id.';

comment on column ticketiq.entries.kind is
'Kinds are the app''s (ticketiq.accept_entry documents the limit).';

comment on column ticketiq.entries.planned_run_id is
'The id its run will have, known when the entry is accepted.';

comment on constraint entries_kind_owner_sender_id_key on ticketiq.entries is
'Sender ids are the owner''s own: two owners'' same id are two entries.';

comment on table ticketiq.cron_schedules is
'Schedules: each due fire becomes one entry.';

comment on table ticketiq.transcript_entries is
'Where answers and failures land for a person to read.';

comment on table ticketiq.audit is
'Audit trail written only by the functions.';

comment on index ticketiq.audit_one_resume_per_epoch_idx is
'Exactly one resume row (crash_resumed or resumed) per run and adopting epoch; '
'record_resume finds it by this index, one probe whatever the statistics say.';

comment on constraint audit_once_keys_pkey on ticketiq.audit_once_keys is
'The (run, event, key) of every row ticketiq.audit_once wrote: a second write of the same key '
'is impossible, whichever session tries it.';

comment on column ticketiq.audit_once_keys.run_id is
'The keys go with their run (on delete cascade).';

comment on column ticketiq.attempts.run_id is
'The attempts go with their run (on delete cascade).';

comment on table ticketiq.leader_leases is
'Named leases that are not runs'' leases (the sweep leader).';

comment on table ticketiq.jobs is
'Background jobs (source syncs, fine-tuning, classifier training, red-team runs).  '
'A running job''s lease lives on its row, fenced by epoch; a lapsed resumable job is queued again '
'with its progress, any other is failed.';

comment on index ticketiq.jobs_running_lease_idx is
'The sweep reads only running jobs'' lease expiries.';

comment on index ticketiq.jobs_queued_idx is
'Job workers claim queued jobs oldest first.';

comment on type ticketiq.fenced is
'What ticketiq._fence returns: the row it locked for a fenced write, in the field of its kind '
'(run or job), the other null.';

comment on type ticketiq.adopted_run is
'What ticketiq.adopt_run and ticketiq.take_over_child return: a run to resume, with its last checkpoint, '
'the state of that step''s calls and any sealed answer.';

comment on column ticketiq.trace_contexts.recorded_at is
'Recorded before the entry is accepted (migration 14), keyed by the entry: its run id is drawn later.';

comment on table ticketiq.trace_contexts is
'The W3C traceparent a run''s entry arrived with, by the entry''s (kind, owner, sender id): its spans are children of it.';

comment on column ticketiq.trace_contexts.owner is
'Whose entry (migration 18): another owner''s entry of the same sender id has a context of its own.';

comment on index ticketiq.entries_kind_sender_id_idx is
'An entry by (kind, sender id) without its owner (ticketiq.get_entry for an operator): the unique key has the owner between them.';
