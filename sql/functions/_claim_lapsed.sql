-- ticketiq._claim_lapsed(sweeper, max losses, limit, run, detail, holder): the lapse claim.
--
-- The one body of every claim of a lapsed lease: ticketiq.sweep_lapsed (all
-- lapsed runs), ticketiq.take_over_child (one child, p_run_id) and
-- ticketiq.watch_processes (every run of p_holder, a process whose liveness
-- session ended: its leases count as lapsed now, claim_reason
-- 'session_ended').  For each running run whose lease expired by the
-- database clock (or is held by p_holder): a compare-and-swap
-- on the epoch it saw raises the epoch by one (I2), so of two racing claims
-- exactly one wins (I3); the loss is counted (I4); the run becomes 'claimed'
-- and channel ticketiq_resume is NOTIFYed, or, lost more than p_max_losses
-- times or not written ahead, it is failed with the reason, its transcript
-- and entry told and the failure audited.  p_detail is added to the
-- agent.run.lease_lapsed audit row.  The caller validates the arguments.
create or replace function ticketiq._claim_lapsed(
    p_sweeper text,
    p_max_losses integer,
    p_limit integer,
    p_run_id uuid,
    p_detail jsonb,
    p_holder text default null
)
returns table (
    run_id uuid,
    epoch bigint,
    loss_count integer,
    status text,
    lapsed_holder text,
    lapsed_at timestamptz
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
    for v_row in
        with lapsed as (
            select r.run_id, r.epoch, r.lease_holder, r.lease_expires_at,
                case
                    when r.lease_expires_at <= v_now
                        then format('lease lapsed at %s held by %s', r.lease_expires_at, r.lease_holder)
                    else format('the liveness session of %s ended', r.lease_holder)
                end as cause
            from ticketiq.runs as r
            where r.status = 'running'
                and (r.lease_expires_at <= v_now or r.lease_holder = p_holder)
                and (p_run_id is null or r.run_id = p_run_id)
            order by r.lease_expires_at
            limit p_limit
            for update skip locked
        )

        update ticketiq.runs as r
        set epoch = r.epoch + 1,
            loss_count = r.loss_count + 1,
            status = case
                when r.loss_count + 1 > p_max_losses or not r.durable then 'failed' else 'claimed'
            end,
            failure_reason = case
                when not r.durable
                    then 'interrupted: not written ahead, ' || l.cause
                when r.loss_count + 1 > p_max_losses
                    then format('lost %s times (more than %s): %s',
                        r.loss_count + 1, p_max_losses, l.cause)
            end,
            finished_at = case
                when r.loss_count + 1 > p_max_losses or not r.durable then v_now
            end,
            claim_reason = case
                when l.lease_expires_at <= v_now then 'lease_lapsed' else 'session_ended'
            end,
            lease_holder = null,
            lease_expires_at = null,
            updated_at = v_now
        from lapsed as l
        where r.run_id = l.run_id
            and r.epoch = l.epoch
            and r.status = 'running'
            and (r.lease_expires_at <= v_now or r.lease_holder = p_holder)
        returning r.run_id, r.epoch, r.loss_count, r.status, r.failure_reason,
            l.lease_holder, l.lease_expires_at
    loop
        insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
        values (v_now, 'agent.run.lease_lapsed', v_row.run_id, v_row.epoch, p_sweeper,
            jsonb_build_object(
                'lapsed_holder', v_row.lease_holder,
                'lapsed_at', v_row.lease_expires_at,
                'loss_count', v_row.loss_count,
                'outcome', v_row.status
            ) || p_detail);
        if v_row.status = 'failed' then
            v_reason := v_row.failure_reason;
            insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
            values (v_now, 'agent.run.failed', v_row.run_id, v_row.epoch, p_sweeper,
                jsonb_build_object('reason', v_reason, 'loss_count', v_row.loss_count));
            insert into ticketiq.transcript_entries (run_id, kind, body, at)
            values (v_row.run_id, 'failed', jsonb_build_object('reason', v_reason), v_now);
            perform ticketiq._finish_entry(v_row.run_id, 'failed',
                jsonb_build_object('reason', v_reason), v_now);
            perform pg_notify('ticketiq_run_finished', v_row.run_id::text);
        else
            perform pg_notify('ticketiq_resume', v_row.run_id::text);
        end if;
        return query select v_row.run_id, v_row.epoch, v_row.loss_count, v_row.status,
            v_row.lease_holder, v_row.lease_expires_at;
    end loop;
end;
$$;

comment on function ticketiq._claim_lapsed(text, integer, integer, uuid, jsonb, text) is
'Internal: claim lapsed runs (all, p_run_id, or every run of the dead process p_holder) once each by epoch CAS; count the loss; fail past max losses; audit and NOTIFY.';
