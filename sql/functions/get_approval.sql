-- ticketiq.get_approval(approval): read an approval request's state.
--
-- What a run waiting on a held call polls (NOTIFY ticketiq_approval is only
-- a hint).
-- Limits:
--   p_approval_id  any approval id
-- SQLSTATEs: TQ009 unknown approval.
create or replace function ticketiq.get_approval(p_approval_id uuid)
returns table (
    approval_id uuid,
    run_id uuid,
    state text,
    decided_by text,
    decided_at timestamptz,
    reason text
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select a.approval_id, a.run_id, a.state, a.decided_by, a.decided_at, a.reason
    from ticketiq.approval_requests as a
    where a.approval_id = p_approval_id;
    if not found then
        raise exception 'unknown approval request %', p_approval_id using errcode = 'TQ009';
    end if;
end;
$$;

comment on function ticketiq.get_approval(uuid) is
'The state of an approval request (waiting, approved, rejected). TQ009 unknown.';
