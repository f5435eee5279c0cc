-- Migration 0013: sender ids are the owner's own, and API keys record their last use.
--
--   * ticketiq.entries is unique by (kind, owner, sender id), not (kind,
--     sender id): two owners whose systems both number their events from 1
--     each start their own run, and one owner's retry still finds its own
--     entry.  ticketiq.accept_entry and ticketiq.get_entry take the owner
--     (get_entry gains p_owner; its old signature goes).  An entry's run is
--     keyed by the entry ('entry:<entry id>'), no longer 'kind:sender id',
--     which two owners would share; runs started before keep their keys.
--   * ticketiq.api_keys.last_used_at: when the key last verified a request
--     (ticketiq.note_api_key_use, at most once a minute), shown by
--     ticketiq.list_api_keys (its result changes, so it is dropped here and
--     created again from functions/).

alter table ticketiq.entries drop constraint entries_kind_sender_id_key;
alter table ticketiq.entries add constraint entries_kind_owner_sender_id_key
unique (kind, owner, sender_id);

alter table ticketiq.api_keys add column last_used_at timestamptz;

drop function if exists ticketiq.get_entry(text, text);
drop function if exists ticketiq.list_api_keys();

insert into ticketiq.schema_migrations (version, name) values (13, 'front_owners');
