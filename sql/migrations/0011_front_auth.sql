-- Migration 0011: the front's API keys, app-defined entry kinds and run ids known at once.
--
--   * ticketiq.entries.kind is no longer one of a fixed list: an app
--     registers its own kinds.  ticketiq.accept_entry checks the documented
--     limit (1 to 64 characters: a lowercase letter, then lowercase letters,
--     digits, '_', '.' or '-'; TQ004); every existing row already meets it.
--   * ticketiq.entries.planned_run_id: the id the entry's run will have,
--     chosen when the entry is accepted, so POST /runs answers it at once.
--     Existing rows carry their run's id over (or a fresh one while pending).
--   * ticketiq.api_keys: the front's API keys, only a SHA-256 hash of each
--     secret stored, with the identity it proves, the run-as names it may
--     act as and its scopes.

alter table ticketiq.entries drop constraint entries_kind_check;
alter table ticketiq.entries add constraint entries_kind_check
check (kind ~ '^[a-z][a-z0-9_.-]{0,63}$');

alter table ticketiq.entries add column planned_run_id uuid;
update ticketiq.entries as e set planned_run_id = coalesce(e.run_id, gen_random_uuid());
alter table ticketiq.entries alter column planned_run_id set not null;
alter table ticketiq.entries alter column planned_run_id set default gen_random_uuid();
alter table ticketiq.entries add constraint entries_planned_run_id_key unique (planned_run_id);

create table ticketiq.api_keys (
    key_id text primary key check (key_id ~ '^[A-Za-z0-9]{8,64}$'),
    key_hash bytea not null check (length(key_hash) = 32),
    identity text not null check (length(identity) between 1 and 512),
    run_as text[] not null default '{}',
    scopes text[] not null default '{}',
    created_at timestamptz not null,
    revoked_at timestamptz
);

comment on table ticketiq.api_keys is
'The front''s API keys: a SHA-256 hash of each secret, the identity it proves, what it may run as, its scopes.';

insert into ticketiq.schema_migrations (version, name) values (11, 'front_auth');
