-- ticketiq._can_run_workflow(can, first, last): whether a process whose declared
-- workflows are p_can (ticketiq.processes.workflows: each workflow's name to the
-- versions its code runs) can run a workflow run whose first checkpoint's body is
-- p_first and last checkpoint's body is p_last.
--
-- It can when it runs the run's version (the first checkpoint's
-- counters.workflow.version) and, once newer code took a step of the run (a worker
-- that runs that version as compatible: counters.workflow.code in the last
-- checkpoint), that code's version too: its path may lead to a step the older
-- code lacks, so the run is pinned to the newer code from then on.  The one rule
-- of ticketiq.adopt_run and ticketiq.unrunnable_runs.
-- Limits: none (a null p_can or a body without a workflow: false).
-- SQLSTATEs: none.
create or replace function ticketiq._can_run_workflow(
    p_can jsonb,
    p_first jsonb,
    p_last jsonb
)
returns boolean
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(
        (p_can -> (p_first #>> '{counters,workflow,name}')) ? (p_first #>> '{counters,workflow,version}'),
        false
    )
    and coalesce(
        (p_can -> (p_first #>> '{counters,workflow,name}')) ? (p_last #>> '{counters,workflow,code}'),
        (p_last #>> '{counters,workflow,code}') is null
    );
$$;

comment on function ticketiq._can_run_workflow(jsonb, jsonb, jsonb) is
'Whether declared workflows p_can run a workflow run of first checkpoint body p_first and last p_last: its version, and the newer code it is pinned to once that code took a step (counters.workflow.code).';
