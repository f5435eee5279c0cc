-- ticketiq._fence(run, epoch, now): lock a run for a fenced write.
--
-- Every write on behalf of an attempt (checkpoint, in-doubt mark, outcome,
-- settlement, answer) goes through here first (invariant I1).  It locks the
-- run's row and raises, changing nothing:
--   TQ001 unknown_run      no such run
--   TQ002 fenced           the run's epoch is not the writer's: it was taken over
--   TQ006 run_not_running  the run is claimed, completed, failed or stopped
--   TQ003 lease_lapsed     the writer's lease expired by the database clock
create or replace function ticketiq._fence(
    p_run_id uuid,
    p_epoch bigint,
    p_now timestamptz
)
returns ticketiq.runs
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_run ticketiq.runs;
begin
    select r.* into v_run
    from ticketiq.runs as r
    where r.run_id = p_run_id
    for update;

    if not found then
        raise exception 'unknown run %', p_run_id
            using errcode = 'TQ001';
    end if;
    if p_epoch is distinct from v_run.epoch then
        raise exception 'run % is at epoch %, the writer holds epoch %', p_run_id, v_run.epoch, p_epoch
            using errcode = 'TQ002',
                  hint = 'The run was taken over; this attempt must stop.';
    end if;
    if v_run.status <> 'running' then
        raise exception 'run % is %, not running', p_run_id, v_run.status
            using errcode = 'TQ006';
    end if;
    -- The clock after the row lock: waiting for it must not stretch a lease.
    if v_run.lease_expires_at <= greatest(p_now, ticketiq.now()) then
        raise exception 'lease checkpoint:% lapsed at %', p_run_id, v_run.lease_expires_at
            using errcode = 'TQ003',
                  hint = 'The lease ran out by the database clock; this attempt must stop.';
    end if;
    return v_run;
end;
$$;

comment on function ticketiq._fence(uuid, bigint, timestamptz) is
'Internal: lock run for a fenced write; raise TQ001 unknown, TQ002 stale epoch, TQ006 not running, TQ003 lease lapsed.';
