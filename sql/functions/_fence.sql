-- ticketiq._fence(kind, id, epoch, now): lock a run or a job for a fenced write.
--
-- The one fence of the lease machine: every write on behalf of an attempt
-- goes through here first (invariant I1), a run's (checkpoint, in-doubt
-- mark, outcome, settlement, answer; p_kind 'run') and a job's (checkpoint,
-- finish, failure; p_kind 'job').  It locks the row of p_id in its kind's
-- table and returns it as the field of that kind of a ticketiq.fenced
-- (run or job; the other is null).  The checks are the same for both kinds, in this order,
-- raising and changing nothing:
--   TQ001 unknown_run / TQ010 unknown_job   no such run / job
--   TQ002 fenced           the epoch is not the writer's: taken over, swept
--   TQ006 not_running      claimed, queued, suspended, completed, failed or stopped
--   TQ003 lease_lapsed     the writer's lease expired by the database clock
-- Each kind's lookup is a static statement (its plan cached); the lease
-- columns are the kind's own row's (a run's checkpoint stays one fenced
-- UPDATE of the run, ticketiq.write_checkpoint).  The caller validates
-- p_kind ('run' or 'job').
create or replace function ticketiq._fence(
    p_kind text,
    p_id uuid,
    p_epoch bigint,
    p_now timestamptz
)
returns ticketiq.fenced
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_run ticketiq.runs;
    v_job ticketiq.jobs;
    v_fenced ticketiq.fenced;
    v_found boolean;
    v_epoch bigint;
    v_running boolean;
    v_state text;
    v_expires timestamptz;
    v_lease text;
begin
    if p_kind = 'run' then
        select r.* into v_run
        from ticketiq.runs as r
        where r.run_id = p_id
        for update;
        v_found := found;
        v_fenced.run := v_run;
        v_epoch := v_run.epoch;
        v_state := v_run.status;
        v_expires := v_run.lease_expires_at;
        v_lease := 'checkpoint:' || p_id;
    else
        select j.* into v_job
        from ticketiq.jobs as j
        where j.job_id = p_id
        for update;
        v_found := found;
        v_fenced.job := v_job;
        v_epoch := v_job.epoch;
        v_state := v_job.state;
        v_expires := v_job.lease_expires_at;
        v_lease := 'job:' || p_id;
    end if;
    v_running := v_state = 'running';

    if not v_found then
        raise exception 'unknown % %', p_kind, p_id
            using errcode = case p_kind when 'run' then 'TQ001' else 'TQ010' end;
    end if;
    if p_epoch is distinct from v_epoch then
        raise exception '% % is at epoch %, the writer holds epoch %', p_kind, p_id, v_epoch, p_epoch
            using errcode = 'TQ002',
                  hint = format('The %s was taken over; this attempt must stop.', p_kind);
    end if;
    if not v_running then
        raise exception '% % is %, not running', p_kind, p_id, v_state
            using errcode = 'TQ006';
    end if;
    -- The clock after the row lock: waiting for it must not stretch a lease.
    if v_expires <= greatest(p_now, ticketiq.now()) then
        raise exception 'lease % lapsed at %', v_lease, v_expires
            using errcode = 'TQ003',
                  hint = 'The lease ran out by the database clock; this attempt must stop.';
    end if;
    return v_fenced;
end;
$$;

comment on function ticketiq._fence(text, uuid, bigint, timestamptz) is
'Internal: the one fence of runs and jobs: lock the row of kind p_kind for a fenced write; raise TQ001/TQ010 unknown, TQ002 stale epoch, TQ006 not running, TQ003 lease lapsed.';
