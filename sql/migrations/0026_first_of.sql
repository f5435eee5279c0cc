-- Migration 0026: a workflow waits for the first of several child runs to end
-- (issue 42, item 5: ctx.first).
--
--   * first_waits: a child run waited for in a group (the parent's wait key
--     first:<parent run id>:<group>, its place in the group).  A run is in
--     at most one group, its parent's.  ticketiq._finish_entry, as the child
--     ends, records it as its group's first end (unless one is recorded) and
--     wakes the parent if it is suspended on the group's key.
--   * first_ends: the first end of each group, written once (the first
--     child to end, in commit order): a parent asking again, after a crash,
--     is told the same child.  Keyed by the parent run and its wait key.
create table ticketiq.first_waits (
    run_id uuid primary key references ticketiq.runs (run_id) on delete cascade,
    parent_run_id uuid not null references ticketiq.runs (run_id) on delete cascade,
    wait_key text not null check (wait_key <> '') check (char_length(wait_key) <= 650),
    place integer not null check (place between 0 and 63)
);

comment on table ticketiq.first_waits is
'A child run its parent waits for with others, the first end of them (ctx.first): the group''s wait key and the child''s place.';

create index first_waits_parent_idx on ticketiq.first_waits (parent_run_id);

create table ticketiq.first_ends (
    run_id uuid not null references ticketiq.runs (run_id) on delete cascade,
    wait_key text not null check (wait_key <> '') check (char_length(wait_key) <= 650),
    child_run_id uuid not null references ticketiq.runs (run_id) on delete cascade,
    place integer not null check (place between 0 and 63),
    ended_at timestamptz not null,
    primary key (run_id, wait_key)
);

comment on table ticketiq.first_ends is
'The first child run of a group to end (written once): what the parent (run_id) is told, again after a crash.';

create index first_ends_child_idx on ticketiq.first_ends (child_run_id);

insert into ticketiq.schema_migrations (version, name) values (26, 'first_of');
