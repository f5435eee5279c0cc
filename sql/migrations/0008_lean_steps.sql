-- Migration 0008: a step's checkpoint costs the server less.
--
-- PostgreSQL checks every CHECK constraint of a table on every UPDATE of a
-- row, whichever columns change, and reads each one's expression back from
-- its stored text once per statement.  write_checkpoint updates only
-- runs.last_step, yet paid for all fourteen of runs' checks (and the
-- checkpoint's insert for its three).  A column's rule held by a domain is
-- checked only where a value is assigned to that column, from an expression
-- cached per session; so the one-column rules of runs and checkpoints move
-- into domains.  The rules themselves do not change (a violation is still
-- SQLSTATE 23514); the checks between columns stay on the tables.
--
-- The checkpoint body is compressed with lz4 where the server was built
-- with it (pglz otherwise, as before): several times cheaper to compress.
--
-- Both tables are rewritten once (a column's type changes).  The views that
-- read the changed columns are dropped and made again; they show those
-- columns as their base types, as before (their grants come back from
-- sql/grants.sql, applied after every install).  Partial indexes on
-- runs.status are rebuilt with the table and still serve the same queries.

create domain ticketiq.nonempty_text as text check (value <> '');

comment on domain ticketiq.nonempty_text is 'Text that is not empty.';

create domain ticketiq.json_object as jsonb check (jsonb_typeof(value) = 'object');

comment on domain ticketiq.json_object is 'A JSON object.';

create domain ticketiq.run_status as text check (
    value in ('running', 'claimed', 'suspended', 'completed', 'failed', 'stopped')
);

comment on domain ticketiq.run_status is 'The state of a run.';

create domain ticketiq.epoch_number as bigint check (value >= 1);

comment on domain ticketiq.epoch_number is 'An epoch: 1 for the first attempt, one more per claim.';

create domain ticketiq.step_number as integer check (value >= 1);

comment on domain ticketiq.step_number is 'A model step of a run, from 1.';

create domain ticketiq.count_number as integer check (value >= 0);

comment on domain ticketiq.count_number is 'A count, or a step where 0 means none yet.';

drop view ticketiq.runs_in_flight;
drop view ticketiq.calls_in_doubt;
drop view ticketiq.entries_open;

alter table ticketiq.runs
drop constraint runs_owner_check,
drop constraint runs_run_as_check,
drop constraint runs_channel_check,
drop constraint runs_entry_point_check,
drop constraint runs_correlation_id_check,
drop constraint runs_meta_check,
drop constraint runs_status_check,
drop constraint runs_epoch_check,
drop constraint runs_loss_count_check,
drop constraint runs_last_step_check,
alter column owner type ticketiq.nonempty_text,
alter column run_as type ticketiq.nonempty_text,
alter column channel type ticketiq.nonempty_text,
alter column entry_point type ticketiq.nonempty_text,
alter column correlation_id type ticketiq.nonempty_text,
alter column meta type ticketiq.json_object,
alter column status type ticketiq.run_status,
alter column epoch type ticketiq.epoch_number,
alter column loss_count type ticketiq.count_number,
alter column last_step type ticketiq.count_number;

alter table ticketiq.checkpoints
drop constraint checkpoints_step_check,
drop constraint checkpoints_seal_check,
drop constraint checkpoints_seal_key_id_check,
alter column step type ticketiq.step_number,
alter column seal type ticketiq.nonempty_text,
alter column seal_key_id type ticketiq.nonempty_text;

do $$
begin
    if exists (
        select 1 from pg_catalog.pg_settings as s
        where s.name = 'default_toast_compression' and 'lz4' = any(s.enumvals)
    ) then
        alter table ticketiq.checkpoints alter column body set compression lz4;
    end if;
end;
$$;

create view ticketiq.runs_in_flight as
select
    r.run_id,
    'checkpoint:' || r.run_id::text as lease_name,
    r.status::text as status,
    r.lease_holder,
    r.lease_expires_at,
    r.epoch::bigint as epoch,
    r.loss_count::integer as loss_count,
    r.last_step::integer as last_step,
    r.owner::text as owner,
    r.channel::text as channel,
    r.entry_point::text as entry_point,
    r.created_at,
    r.updated_at
from ticketiq.runs as r
where r.status in ('running', 'claimed');

comment on view ticketiq.runs_in_flight is
'Runs that are running or claimed for resumption, with their lease holder and expiry.';

create view ticketiq.calls_in_doubt as
select
    c.run_id,
    c.step,
    c.call_id,
    c.tool,
    c.marked_classification,
    c.step_key,
    c.marked_at,
    c.marked_epoch,
    r.status::text as run_status,
    r.lease_holder
from ticketiq.calls as c
inner join ticketiq.runs as r on c.run_id = r.run_id
where c.state = 'in_doubt';

comment on view ticketiq.calls_in_doubt is
'Changing calls marked in doubt whose outcome is not yet recorded or settled.';

create view ticketiq.entries_open as
select
    e.entry_id,
    e.kind,
    e.sender_id,
    e.state,
    e.run_id,
    r.status::text as run_status,
    r.lease_holder,
    r.lease_expires_at,
    e.received_at,
    e.started_at
from ticketiq.entries as e
left join ticketiq.runs as r on e.run_id = r.run_id
where e.state in ('pending', 'running');

comment on view ticketiq.entries_open is
'Entry-point deliveries not yet answered: pending ones and those whose run is in flight.';

insert into ticketiq.schema_migrations (version, name) values (8, 'lean_steps');
