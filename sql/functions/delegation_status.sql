-- ticketiq.delegation_status(key): find a delegation's child run by its key.
--
-- A parent asks again by its delegation key (the child's idempotency key):
-- this returns the child (or no row when none was ever started), whether
-- its lease lapsed by the database clock, and its answer once sealed, so
-- the parent takes the answer, waits for a child that is alive, or takes
-- over a child whose lease lapsed (ticketiq.take_over_child).  Only child
-- runs (with a parent) are found.
-- Limits:
--   p_delegation_key  1..600 (the child's idempotency key)
-- SQLSTATEs: TQ004 (bad key).
create or replace function ticketiq.delegation_status(p_delegation_key text)
returns table (
    run_id uuid,
    parent_run_id uuid,
    status text,
    epoch bigint,
    lease_lapsed boolean,
    failure_reason text,
    answer jsonb,
    answer_step integer
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
begin
    perform ticketiq._require_text('delegation_key', p_delegation_key, 600);
    return query
    select r.run_id, r.parent_run_id, r.status::text, r.epoch::bigint,
        r.status = 'running' and r.lease_expires_at <= v_now,
        r.failure_reason, a.body, a.step
    from ticketiq.runs as r
    left join ticketiq.answers as a on r.run_id = a.run_id
    where r.idempotency_key = p_delegation_key and r.parent_run_id is not null;
end;
$$;

comment on function ticketiq.delegation_status(text) is
'The child run of a delegation key: status, lease lapsed?, sealed answer. No row when never started.';
