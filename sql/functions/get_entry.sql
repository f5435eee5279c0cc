-- ticketiq.get_entry(kind, sender id, owner): an entry with its run and answer.
--
-- What an A2A tasks/get (or a retried request) reads: the entry's state,
-- its run's id (known while pending too), its run's status and the run's
-- sealed answer, if any.  Sender ids are each owner's own: p_owner names
-- whose (null: every owner's entry of that sender id, oldest first, for
-- an operator).  No row for an unknown entry.
-- Limits:
--   p_kind       compared only, not stored: any text (no row when unknown)
--   p_sender_id  compared only, not stored: any text (no row when unknown)
--   p_owner      compared only, not stored: any text, or null (any owner)
-- SQLSTATEs: none.
create or replace function ticketiq.get_entry(
    p_kind text, p_sender_id text, p_owner text default null
)
returns table (
    entry_id bigint,
    kind text,
    sender_id text,
    state text,
    run_id uuid,
    run_status text,
    failure_reason text,
    answer jsonb,
    outcome jsonb,
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
    select e.entry_id, e.kind, e.sender_id, e.state, coalesce(e.run_id, e.planned_run_id), r.status::text, r.failure_reason,
        a.body, e.outcome, e.received_at, e.finished_at
    from ticketiq.entries as e
    left join ticketiq.runs as r on e.run_id = r.run_id
    left join ticketiq.answers as a on e.run_id = a.run_id
    where e.kind = p_kind and e.sender_id = p_sender_id
        and (p_owner is null or e.owner = p_owner)
    order by e.entry_id;
end;
$$;

comment on function ticketiq.get_entry(text, text, text) is
'An entry by (kind, sender id, owner; null owner: any) with its run''s status and sealed answer; no row if unknown.';
