-- ticketiq.get_entry_by_run(run id): the entry a run was (or will be) started for.
--
-- What GET /runs/{id} reads: the run id POST /runs answered is known before
-- an entry pump claims the entry, so a pending entry is found by the id its
-- run will have.  With the entry's owner and run-as (who may see it), its
-- run's status and sealed answer.  No row for a run of no entry.
-- Limits:
--   p_run_id  compared only: any id (no row when unknown)
-- SQLSTATEs: none.
create or replace function ticketiq.get_entry_by_run(p_run_id uuid)
returns table (
    entry_id bigint,
    kind text,
    sender_id text,
    state text,
    run_id uuid,
    owner text,
    run_as text,
    run_status text,
    failure_reason text,
    answer jsonb,
    received_at timestamptz,
    finished_at timestamptz
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select e.entry_id, e.kind, e.sender_id, e.state, coalesce(e.run_id, e.planned_run_id), e.owner,
        e.run_as, r.status::text, r.failure_reason, a.body, e.received_at, e.finished_at
    from ticketiq.entries as e
    left join ticketiq.runs as r on e.run_id = r.run_id
    left join ticketiq.answers as a on e.run_id = a.run_id
    where e.planned_run_id = p_run_id or e.run_id = p_run_id
    order by e.entry_id
    limit 1;
end;
$$;

comment on function ticketiq.get_entry_by_run(uuid) is
'The entry of a run id (pending ones too) with its owner, run-as, run status and sealed answer; no row if none.';
