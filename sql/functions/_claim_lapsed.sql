-- ticketiq._claim_lapsed(kind, sweeper, max losses, limit, id, detail, holders): the lapse claim.
--
-- The one claim of a lapsed lease, for runs (p_kind 'run') and jobs
-- (p_kind 'job'): ticketiq.sweep_lapsed and ticketiq.sweep_jobs (every
-- lapsed lease of the kind), ticketiq.take_over_child (one child run,
-- p_id) and ticketiq.watch_processes (the runs and jobs of p_holders,
-- processes whose liveness session ended, once the short grace it gave
-- their leases has passed).  For each running row of the kind whose lease
-- expired by the database clock: a compare-and-swap on the epoch it saw
-- raises the epoch by one (I2), so of two racing claims exactly one wins
-- (I3); the loss is counted (I4: runs.loss_count, jobs.attempts); the
-- lease is cleared.  Rows locked by a racing claim are skipped.  Only the
-- partial index of running rows is read.
--   run: it becomes 'claimed' and channel ticketiq_resume is NOTIFYed, or,
--        lost more than p_max_losses times or not written ahead, it is
--        failed with the reason, its transcript and entry told and the
--        failure audited.  A run whose answer is sealed but not handed on
--        is claimed whatever its losses: its replacement hands that answer
--        on and runs nothing (I10).  The claim's reason is 'session_ended'
--        when the holder's process was found dead by its liveness session,
--        else 'lease_lapsed'; it is the run's claim_reason and the
--        agent.run.lease_lapsed audit row's reason (p_detail added under the
--        system's fields, which it cannot overwrite).
--   job: a resumable job lost at most p_max_losses times is queued again
--        with its progress kept, audited job.requeued, and channel
--        ticketiq_job is NOTIFYed; any other is failed 'interrupted: ...'
--        or 'lost N times', audited job.interrupted (with the reason
--        session_ended when so found; p_detail under the system's fields).
-- Returns one row per lease claimed: its id, new epoch, losses, new state
-- (claimed/failed, queued/failed), the lapsed holder and expiry, and the
-- job's kind (null for a run).  Each kind's claim is a static statement.
-- The caller validates the arguments.
create or replace function ticketiq._claim_lapsed(
    p_kind text,
    p_sweeper text,
    p_max_losses integer,
    p_limit integer,
    p_id uuid,
    p_detail jsonb,
    p_holders text[] default null
)
returns table (
    id uuid,
    epoch bigint,
    losses integer,
    state text,
    lapsed_holder text,
    lapsed_at timestamptz,
    job_kind text
)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_row record;
    v_reason text;
begin
    if p_kind = 'job' then
        for v_row in
            with lapsed as (
                select j.job_id, j.epoch, j.holder, j.lease_expires_at,
                    coalesce(p.ended_reason = 'liveness session ended', false) as session_ended
                from ticketiq.jobs as j
                left join ticketiq.processes as p on j.holder = p.process_id
                where j.state = 'running'
                    and j.lease_expires_at <= v_now
                    and (p_id is null or j.job_id = p_id)
                    and (p_holders is null or j.holder = any(p_holders))
                order by j.lease_expires_at
                limit p_limit
                for update of j skip locked
            )

            update ticketiq.jobs as j
            set epoch = j.epoch + 1,
                attempts = j.attempts + 1,
                state = case
                    when j.resumable and j.attempts + 1 <= p_max_losses then 'queued' else 'failed'
                end,
                failure_reason = case
                    when not j.resumable
                        then format('interrupted: not resumable, lease lapsed at %s held by %s',
                            l.lease_expires_at, l.holder)
                    when j.attempts + 1 > p_max_losses
                        then format('lost %s times (more than %s): lease lapsed at %s held by %s',
                            j.attempts + 1, p_max_losses, l.lease_expires_at, l.holder)
                end,
                finished_at = case
                    when not j.resumable or j.attempts + 1 > p_max_losses then v_now
                end,
                holder = null,
                lease_expires_at = null,
                updated_at = v_now
            from lapsed as l
            where j.job_id = l.job_id
                and j.epoch = l.epoch
                and j.state = 'running'
                and j.lease_expires_at <= v_now
            returning j.job_id, j.kind, j.epoch, j.attempts, j.state, j.failure_reason, j.progress,
                l.holder, l.lease_expires_at, l.session_ended
        loop
            insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
            values (v_now, case when v_row.state = 'queued' then 'job.requeued' else 'job.interrupted' end,
                null, v_row.epoch, p_sweeper,
                -- the caller's detail first: the system's fields after it win
                p_detail || jsonb_build_object(
                    'job_id', v_row.job_id,
                    'kind', v_row.kind,
                    'lapsed_holder', v_row.holder,
                    'lapsed_at', v_row.lease_expires_at,
                    'attempts', v_row.attempts
                ) || case
                    when v_row.state = 'queued' then jsonb_build_object('progress', v_row.progress)
                    else jsonb_build_object('reason', v_row.failure_reason)
                end || case
                    when v_row.session_ended then jsonb_build_object('claim_reason', 'session_ended')
                    else '{}'::jsonb
                end);
            if v_row.state = 'queued' then
                perform pg_notify('ticketiq_job', v_row.job_id::text);
            end if;
            return query select v_row.job_id, v_row.epoch::bigint, v_row.attempts::integer,
                v_row.state::text, v_row.holder::text, v_row.lease_expires_at, v_row.kind::text;
        end loop;
        return;
    end if;
    for v_row in
        with lapsed as (
            select r.run_id, r.epoch, r.lease_holder, r.lease_expires_at,
                coalesce(p.ended_reason = 'liveness session ended', false) as session_ended,
                exists (
                    select 1 from ticketiq.answers as a
                    where a.run_id = r.run_id and a.handed_on_at is null
                ) as answer_waiting,
                case
                    when p.ended_reason = 'liveness session ended'
                        then format('the liveness session of %s ended', r.lease_holder)
                    else format('lease lapsed at %s held by %s', r.lease_expires_at, r.lease_holder)
                end as cause
            from ticketiq.runs as r
            left join ticketiq.processes as p on r.lease_holder = p.process_id
            where r.status = 'running'
                and r.lease_expires_at <= v_now
                and (p_id is null or r.run_id = p_id)
                and (p_holders is null or r.lease_holder = any(p_holders))
            order by r.lease_expires_at
            limit p_limit
            for update of r skip locked
        )

        update ticketiq.runs as r
        set epoch = r.epoch + 1,
            loss_count = r.loss_count + 1,
            status = case
                when l.answer_waiting then 'claimed'
                when r.loss_count + 1 > p_max_losses or not r.durable then 'failed' else 'claimed'
            end,
            failure_reason = case
                when l.answer_waiting then null
                when not r.durable
                    then 'interrupted: not written ahead, ' || l.cause
                when r.loss_count + 1 > p_max_losses
                    then format('lost %s times (more than %s): %s',
                        r.loss_count + 1, p_max_losses, l.cause)
            end,
            finished_at = case
                when l.answer_waiting then null
                when r.loss_count + 1 > p_max_losses or not r.durable then v_now
            end,
            claim_reason = case when l.session_ended then 'session_ended' else 'lease_lapsed' end,
            lease_holder = null,
            lease_expires_at = null,
            updated_at = v_now
        from lapsed as l
        where r.run_id = l.run_id
            and r.epoch = l.epoch
            and r.status = 'running'
            and r.lease_expires_at <= v_now
        returning r.run_id, r.epoch, r.loss_count, r.status, r.failure_reason,
            l.lease_holder, l.lease_expires_at, l.session_ended
    loop
        insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
        values (v_now, 'agent.run.lease_lapsed', v_row.run_id, v_row.epoch, p_sweeper,
            -- the caller's detail first: the system's fields after it win
            p_detail || jsonb_build_object(
                'lapsed_holder', v_row.lease_holder,
                'lapsed_at', v_row.lease_expires_at,
                'loss_count', v_row.loss_count,
                'outcome', v_row.status
            ) || case
                when v_row.session_ended then jsonb_build_object('reason', 'session_ended')
                else '{}'::jsonb
            end);
        if v_row.status = 'failed' then
            v_reason := v_row.failure_reason;
            insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
            values (v_now, 'agent.run.failed', v_row.run_id, v_row.epoch, p_sweeper,
                jsonb_build_object('reason', v_reason, 'loss_count', v_row.loss_count));
            insert into ticketiq.transcript_entries (run_id, kind, body, at)
            values (v_row.run_id, 'failed', jsonb_build_object('reason', v_reason), v_now);
            -- The run's event stream (migration 0019), the row still locked.
            insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
            select v_row.run_id, 'failed', r.last_step, v_row.epoch,
                jsonb_build_object('reason', v_reason, 'event', 'agent.run.failed'), v_now
            from ticketiq.runs as r where r.run_id = v_row.run_id;
            perform ticketiq._finish_entry(v_row.run_id, 'failed',
                jsonb_build_object('reason', v_reason), v_now);
            perform pg_notify('ticketiq_run_finished', v_row.run_id::text);
        else
            perform pg_notify('ticketiq_resume', v_row.run_id::text);
        end if;
        return query select v_row.run_id, v_row.epoch::bigint, v_row.loss_count::integer,
            v_row.status::text,
            v_row.lease_holder, v_row.lease_expires_at, null::text;
    end loop;
end;
$$;

comment on function ticketiq._claim_lapsed(text, text, integer, integer, uuid, jsonb, text[]) is
'Internal: the one claim of lapsed leases of runs or jobs. Runs: claim lapsed runs (all, p_run_id, or those of p_holders) once each by epoch CAS; reason session_ended for a holder found dead by its liveness session; count the loss; fail past max losses; audit and NOTIFY.';
