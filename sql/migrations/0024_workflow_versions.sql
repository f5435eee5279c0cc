-- Migration 0024: workflows that live through deploys (issue 42, item 4).
--
--   * processes.workflows: what an app process can run, {name: [version,
--     ...]}, said by ticketiq.declare_workflows at its start; null for a
--     process that said nothing (it runs any run, as before this version).
--     ticketiq.adopt_run adopts a workflow run only for a process whose
--     declaration names the run's workflow and version (the ones its first
--     checkpoint names: a run stays on the version it started with), so in a
--     rolling deploy a run the new code cannot run waits for a worker that
--     can, never failed for the deploy.
--   * workflow_versions: every workflow version a process declared, with its
--     entry kind and the signals it waits for (null: not declared, any name).
--     ticketiq.send_signal refuses a signal of another name (TQ014).  Keyed
--     by the app's workflow name and version, named by its code, not an
--     owner's (schema test 08 lists it).
create table ticketiq.workflow_versions (
    name text not null check (name <> '') check (char_length(name) <= 100),
    version text not null check (version <> '') check (char_length(version) <= 100),
    kind text not null check (kind <> '') check (char_length(kind) <= 512),
    signals text[] check (cardinality(signals) <= 100),
    declared_at timestamptz not null,
    declared_by text not null check (declared_by <> '') check (char_length(declared_by) <= 512),
    primary key (name, version)
);

comment on table ticketiq.workflow_versions is
'Workflow versions app processes declared (ticketiq.declare_workflows): their entry kind and the signals they wait for (null: any name).';

create index workflow_versions_kind_idx on ticketiq.workflow_versions (kind);

comment on index ticketiq.workflow_versions_kind_idx is
'ticketiq.send_signal finds the versions of a run''s entry kind before its first checkpoint names one.';

alter table ticketiq.processes add column workflows jsonb
check (workflows is null or jsonb_typeof(workflows) = 'object');

comment on column ticketiq.processes.workflows is
'The workflows and versions the process can run, {name: [version, ...]} (ticketiq.declare_workflows); null: it said nothing and runs any run.';

insert into ticketiq.schema_migrations (version, name) values (24, 'workflow_versions');
