-- ticketiq.list_runs(owner, statuses, kind, workflow, ranges, failure, cursor, limit): a page of runs.
--
-- Runs newest first, by the keyset (created_at, run_id): a page starts after
-- the cursor (p_after_created, p_after_run_id: the last row of the page
-- before; both null for the first page) and holds at most p_limit rows.
-- One owner's runs (p_owner) are read through runs_owner_created_idx, every
-- owner's (p_owner null: an admin) through runs_created_idx, one index range
-- scan a page whatever the number of runs kept.  Each filter is optional
-- (null: any):
--   p_statuses                         the run's status is one of them
--   p_kind                             its entry point (the entry's kind)
--   p_workflow                         the workflow its first checkpoint names
--   p_created_from, p_created_to       created in [from, to)
--   p_ended_from, p_ended_to           finished in [from, to)
--   p_failure                          its failure reason contains this text
-- Each row says the workflow and version its first checkpoint names (null for an
-- agent run, or a workflow before its first action) and the run it was forked
-- from.  Without a cursor the keyset starts above every run, so the range is
-- an index condition on every page.
-- Limits:
--   p_owner           null (every owner), or 1..512
--   p_statuses        null, or a one-dimensional array of run statuses (running, claimed, suspended,
--                     completed, failed, stopped)
--   p_kind            null, or 1..512
--   p_workflow        null, or 1..200
--   p_created_from    null, or a finite time
--   p_created_to      null, or a finite time
--   p_ended_from      null, or a finite time
--   p_ended_to        null, or a finite time
--   p_failure         null, or 1..200
--   p_after_created   null, or a finite time (with p_after_run_id)
--   p_after_run_id    null, or a run id (with p_after_created)
--   p_limit           from 1 to 500
-- SQLSTATEs: TQ004 (bad filter, cursor or limit; ticketiq._require_run_filters).
create or replace function ticketiq.list_runs(
    p_owner text default null,
    p_statuses text[] default null,
    p_kind text default null,
    p_workflow text default null,
    p_created_from timestamptz default null,
    p_created_to timestamptz default null,
    p_ended_from timestamptz default null,
    p_ended_to timestamptz default null,
    p_failure text default null,
    p_after_created timestamptz default null,
    p_after_run_id uuid default null,
    p_limit integer default 50
)
returns table (
    run_id uuid,
    owner text,
    kind text,
    status text,
    workflow text,
    workflow_version text,
    epoch bigint,
    loss_count integer,
    last_step integer,
    failure_reason text,
    parent_run_id uuid,
    forked_from uuid,
    created_at timestamptz,
    updated_at timestamptz,
    finished_at timestamptz
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_after_created timestamptz;
    v_after_run_id uuid;
begin
    perform ticketiq._require_run_filters(p_owner, p_kind, p_workflow, p_statuses, false,
        array[p_created_from, p_created_to, p_ended_from, p_ended_to, p_after_created], p_limit, 500);
    perform ticketiq._require_text('failure', p_failure, 200, true);
    if (p_after_created is null) <> (p_after_run_id is null) then
        raise exception 'a cursor is both its created_at and its run id, or neither' using errcode = 'TQ004';
    end if;

    -- Without a cursor the keyset starts above every run, so the range condition is an
    -- index condition on every page, the first too.
    v_after_created := coalesce(p_after_created, 'infinity');
    v_after_run_id := coalesce(p_after_run_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
    if p_owner is not null then
        return query
        select r.run_id, r.owner::text, r.entry_point::text, r.status::text, w.name, w.version,
            r.epoch::bigint, r.loss_count::integer, r.last_step::integer, r.failure_reason,
            r.parent_run_id, (r.meta -> 'forked_from' ->> 'run_id')::uuid,
            r.created_at, r.updated_at, r.finished_at
        from ticketiq.runs as r
        left join lateral (
            select c.body #>> '{counters,workflow,name}' as name,
                c.body #>> '{counters,workflow,version}' as version
            from ticketiq.checkpoints as c
            where c.run_id = r.run_id and c.step = 1
        ) as w on true
        where r.owner = p_owner
            and (r.created_at, r.run_id) < (v_after_created, v_after_run_id)
            and (p_statuses is null or r.status = any(p_statuses))
            and (p_kind is null or r.entry_point = p_kind)
            and (p_workflow is null or w.name = p_workflow)
            and (p_created_from is null or r.created_at >= p_created_from)
            and (p_created_to is null or r.created_at < p_created_to)
            and (p_ended_from is null or r.finished_at >= p_ended_from)
            and (p_ended_to is null or r.finished_at < p_ended_to)
            and (p_failure is null or strpos(r.failure_reason, p_failure) > 0)
        order by r.owner desc, r.created_at desc, r.run_id desc
        limit p_limit;
        return;
    end if;
    return query
    select r.run_id, r.owner::text, r.entry_point::text, r.status::text, w.name, w.version,
        r.epoch::bigint, r.loss_count::integer, r.last_step::integer, r.failure_reason,
        r.parent_run_id, (r.meta -> 'forked_from' ->> 'run_id')::uuid,
        r.created_at, r.updated_at, r.finished_at
    from ticketiq.runs as r
    left join lateral (
        select c.body #>> '{counters,workflow,name}' as name,
            c.body #>> '{counters,workflow,version}' as version
        from ticketiq.checkpoints as c
        where c.run_id = r.run_id and c.step = 1
    ) as w on true
    where (r.created_at, r.run_id) < (v_after_created, v_after_run_id)
        and (p_statuses is null or r.status = any(p_statuses))
        and (p_kind is null or r.entry_point = p_kind)
        and (p_workflow is null or w.name = p_workflow)
        and (p_created_from is null or r.created_at >= p_created_from)
        and (p_created_to is null or r.created_at < p_created_to)
        and (p_ended_from is null or r.finished_at >= p_ended_from)
        and (p_ended_to is null or r.finished_at < p_ended_to)
        and (p_failure is null or strpos(r.failure_reason, p_failure) > 0)
    order by r.created_at desc, r.run_id desc
    limit p_limit;
end;
$$;

comment on function ticketiq.list_runs(
    text, text[], text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, timestamptz, uuid,
    integer
) is
'A page of runs newest first by the keyset (created_at, run_id), filtered by owner, status, kind, workflow, created and ended ranges and failure reason; one index range scan a page. TQ004.';
