-- ticketiq.get_run(run): a run's state as the API shows it.
--
-- Status, lease holder and expiry, epoch, losses, last step, entry point,
-- the sealed answer if any and the failure reason.  Any ticketiq_app
-- login may read any run, its holder and epoch included (see the trust
-- model in docs/sql-api.md).
-- Limits:
--   p_run_id  any run id
-- SQLSTATEs: TQ001 unknown run.
create or replace function ticketiq.get_run(p_run_id uuid)
returns table (
    run_id uuid,
    status text,
    entry_point text,
    owner text,
    channel text,
    epoch bigint,
    lease_holder text,
    lease_expires_at timestamptz,
    loss_count integer,
    last_step integer,
    parent_run_id uuid,
    wait_key text,
    failure_reason text,
    answer jsonb,
    created_at timestamptz,
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
    select r.run_id, r.status::text, r.entry_point::text, r.owner::text, r.channel::text,
        r.epoch::bigint, r.lease_holder, r.lease_expires_at, r.loss_count::integer,
        r.last_step::integer, r.parent_run_id, r.wait_key,
        r.failure_reason, a.body, r.created_at, r.finished_at
    from ticketiq.runs as r
    left join ticketiq.answers as a on r.run_id = a.run_id
    where r.run_id = p_run_id;
    if not found then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
end;
$$;

comment on function ticketiq.get_run(uuid) is
'A run''s status, lease, losses, last step, answer and failure reason. TQ001 unknown.';
