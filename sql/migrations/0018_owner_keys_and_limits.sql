-- Migration 0018: an owner's trace context keyed by its owner, every text
-- limit that an index holds declared on its column, and a lookup of an
-- entry by its sender id without the owner that reads an index (issue 46).
--
--   * ticketiq.trace_contexts is keyed by (kind, owner, sender id), as the
--     entries it belongs to are (migration 13): keyed by (kind, sender id)
--     alone, owner B's entry read owner A's traceparent and purging A's
--     run deleted B's.  Each row recorded before is given the owner of the
--     first entry of its (kind, sender id) (the entry it was recorded for:
--     a later owner's record of the same ids changed nothing); a row with
--     no entry (recorded for a request refused after it) is deleted.
--     ticketiq.record_trace_context takes the owner (its old signature goes).
--   * A text column in a btree index has its limit declared on the column
--     (a CHECK of char_length, counted at four bytes a character, or of
--     octet_length, in bytes), so a limit cannot overflow its index (2704
--     bytes a row): pgTAP schema/07_text_limits_fit_their_indexes.sql adds
--     them up for every index.  Sender ids and a signal's sender key are
--     limited in bytes (512 of UTF-8), the kind of an entry to 64 bytes (its
--     pattern allows ASCII only): 512 characters of each beside a
--     512-character owner overflowed the index with four-byte characters
--     (54000).  The checks are NOT VALID: rows written before keep their
--     values (they fit, being in the index), new ones are checked.
--   * entries_kind_sender_id_idx: ticketiq.get_entry without an owner (an
--     operator's lookup) reads an index again; the unique key has the owner
--     between the kind and the sender id.
--   * ticketiq._wake takes the run it may wake (null: every run on the key),
--     so a due timer wakes its own run only (its old signature goes).

alter table ticketiq.trace_contexts add column owner text;

update ticketiq.trace_contexts as t
set owner = (
    select e.owner
    from ticketiq.entries as e
    where e.kind = t.kind and e.sender_id = t.sender_id
    order by e.entry_id
    limit 1
);

delete from ticketiq.trace_contexts as t where t.owner is null;

alter table ticketiq.trace_contexts
alter column owner set not null,
drop constraint trace_contexts_pkey,
add constraint trace_contexts_pkey primary key (kind, owner, sender_id),
add constraint trace_contexts_kind_limit check (octet_length(kind) <= 64) not valid,
add constraint trace_contexts_owner_limit check (char_length(owner) <= 512) not valid,
add constraint trace_contexts_sender_id_limit check (octet_length(sender_id) <= 512) not valid;

create index entries_kind_sender_id_idx on ticketiq.entries (kind, sender_id);

alter table ticketiq.entries
add constraint entries_kind_limit check (octet_length(kind) <= 64) not valid,
add constraint entries_owner_limit check (char_length(owner) <= 512) not valid,
add constraint entries_sender_id_limit check (octet_length(sender_id) <= 512) not valid;

alter table ticketiq.workflow_signals
add constraint workflow_signals_name_limit check (char_length(name) <= 200) not valid,
add constraint workflow_signals_sender_key_limit check (octet_length(sender_key) <= 512) not valid,
add constraint workflow_signals_consumed_by_limit check (char_length(consumed_by) <= 512) not valid;

alter table ticketiq.workflow_timers
add constraint workflow_timers_timer_key_limit check (char_length(timer_key) <= 512) not valid;

alter table ticketiq.api_keys
add constraint api_keys_key_id_limit check (char_length(key_id) <= 64) not valid;

alter table ticketiq.approval_requests
add constraint approval_requests_call_id_limit check (char_length(call_id) <= 256) not valid;

alter table ticketiq.calls
add constraint calls_call_id_limit check (char_length(call_id) <= 256) not valid;

alter table ticketiq.attempts
add constraint attempts_target_limit check (char_length(target) <= 256) not valid;

alter table ticketiq.audit
add constraint audit_event_limit check (char_length(event) <= 200) not valid;

alter table ticketiq.audit_once_keys
add constraint audit_once_keys_event_limit check (char_length(event) <= 200) not valid,
add constraint audit_once_keys_key_limit check (char_length(key) <= 256) not valid;

alter table ticketiq.cron_schedules
add constraint cron_schedules_name_limit check (char_length(name) <= 256) not valid;

alter table ticketiq.jobs
add constraint jobs_idempotency_key_limit check (char_length(idempotency_key) <= 600) not valid;

alter table ticketiq.leader_leases
add constraint leader_leases_name_limit check (char_length(name) <= 512) not valid;

alter table ticketiq.processes
add constraint processes_process_id_limit check (char_length(process_id) <= 512) not valid;

drop function if exists ticketiq.record_trace_context(text, text, text);
drop function if exists ticketiq._wake(text, timestamptz);

insert into ticketiq.schema_migrations (version, name) values (18, 'owner_keys_and_limits');
