-- ticketiq.purge_history(older than seconds, limit): delete finished runs' history.
--
-- Deletes at most p_limit runs that finished (completed, failed or
-- stopped) at least p_older_than_seconds ago by the database clock, with
-- everything kept for them: checkpoints, calls, approval requests,
-- transcript entries, event streams (uncounted), inbox entries (with the traceparent each came with,
-- its owner's only, uncounted) and audit rows (a run's failed
-- attempts and audit_once keys go with its row, on delete cascade,
-- uncounted); then at most p_limit audit rows older than that age that
-- belong to no run still kept (leader.* and job.* rows, rows of runs
-- deleted earlier).  Returns one row
-- of counts.  A run is left alone while it still has a sealed answer (those
-- go only through ticketiq.purge_answers, once retain_until has passed, so
-- run purge_answers first), while it has a child run (the child goes
-- first, on this call or the next), and, as a child, while its parent has
-- not finished (the parent may still ask for it by its delegation key).
-- Running, claimed and suspended runs, and their audit rows, are never
-- touched.  The record of a person's ad hoc calls (inspector.* audit rows)
-- is kept at least 90 days whatever p_older_than_seconds says: a floor the
-- app role cannot lower (its run may go before it).  A deleted inbox entry no longer dedupes its sender's id, so
-- choose an age longer than any sender retries.  Runs are taken with FOR
-- UPDATE SKIP LOCKED, so purges may race; call it until every count is 0.
-- Finished runs are found by age through runs_finished_idx (schema 6).
-- Limits:
--   p_older_than_seconds  seconds in (0, 1e9]
--   p_limit               >= 1
-- SQLSTATEs: TQ004 (bad age or limit).
create or replace function ticketiq.purge_history(
    p_older_than_seconds double precision,
    p_limit integer default 1000
)
returns table (
    runs_purged integer,
    checkpoints_purged integer,
    calls_purged integer,
    approvals_purged integer,
    transcript_purged integer,
    entries_purged integer,
    audit_purged integer
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_cutoff timestamptz;
    v_record_cutoff timestamptz;
    v_run_ids uuid[];
    v_count integer;
begin
    v_cutoff := v_now - ticketiq._require_positive('older_than', p_older_than_seconds);
    -- The record of a person's ad hoc calls (inspector.*) is kept 90 days at least,
    -- whatever age the caller asks for: the app role cannot lower the floor.
    v_record_cutoff := least(v_cutoff, v_now - interval '90 days');
    if p_limit is null or p_limit < 1 then
        raise exception 'limit must be >= 1' using errcode = 'TQ004';
    end if;

    select coalesce(array_agg(d.run_id), '{}') into v_run_ids
    from (
        select r.run_id
        from ticketiq.runs as r
        where r.status in ('completed', 'failed', 'stopped')
            and r.finished_at <= v_cutoff
            and not exists (select 1 from ticketiq.answers as a where a.run_id = r.run_id)
            and not exists (select 1 from ticketiq.runs as c where c.parent_run_id = r.run_id)
            and (
                r.parent_run_id is null
                or exists (
                    select 1
                    from ticketiq.runs as p
                    where p.run_id = r.parent_run_id and p.status in ('completed', 'failed', 'stopped')
                )
            )
        limit p_limit
        for update of r skip locked
    ) as d;

    delete from ticketiq.approval_requests as a where a.run_id = any(v_run_ids);
    get diagnostics v_count = row_count;
    approvals_purged := v_count;
    delete from ticketiq.calls as c where c.run_id = any(v_run_ids);
    get diagnostics v_count = row_count;
    calls_purged := v_count;
    delete from ticketiq.checkpoints as k where k.run_id = any(v_run_ids);
    get diagnostics v_count = row_count;
    checkpoints_purged := v_count;
    delete from ticketiq.transcript_entries as t where t.run_id = any(v_run_ids);
    get diagnostics v_count = row_count;
    transcript_purged := v_count;
    -- A run's event stream goes with its transcript (uncounted).
    delete from ticketiq.run_events as e where e.run_id = any(v_run_ids);
    -- The traceparent an entry came with goes with it.
    with gone as (
        delete from ticketiq.entries as e where e.run_id = any(v_run_ids)
        returning e.kind, e.owner, e.sender_id
    ),

    traced as (
        delete from ticketiq.trace_contexts as t
        using gone as g
        where t.kind = g.kind and t.owner = g.owner and t.sender_id = g.sender_id
    )

    select count(*)::integer into v_count from gone;
    entries_purged := v_count;
    delete from ticketiq.audit as a
    where a.run_id = any(v_run_ids) and a.at <= v_cutoff
        and (a.event not like 'inspector.%' or a.at <= v_record_cutoff);
    get diagnostics v_count = row_count;
    audit_purged := v_count;
    delete from ticketiq.runs as r where r.run_id = any(v_run_ids);
    get diagnostics v_count = row_count;
    runs_purged := v_count;

    with doomed as (
        select a.audit_id
        from ticketiq.audit as a
        where a.at <= v_cutoff
            and (a.event not like 'inspector.%' or a.at <= v_record_cutoff)
            and (
                a.run_id is null
                or not exists (select 1 from ticketiq.runs as r where r.run_id = a.run_id)
            )
        order by a.audit_id
        limit p_limit
        for update of a skip locked
    )

    delete from ticketiq.audit as a
    using doomed as d
    where a.audit_id = d.audit_id;
    get diagnostics v_count = row_count;
    audit_purged := audit_purged + v_count;

    return next;
end;
$$;

comment on function ticketiq.purge_history(double precision, integer) is
'Delete up to p_limit runs finished at least p_older_than_seconds ago (no sealed answer left, no child, parent finished) with their checkpoints, calls, approvals, transcript, entries, audit and failed attempts, and old audit rows of no kept run; returns counts.';
