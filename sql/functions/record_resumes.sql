-- ticketiq.record_resumes(run ids, epochs, settlements): the settlements of
-- several resumes in one statement (group commit).
--
-- The arrays are read in parallel: item i is one call of
-- ticketiq.record_resume(p_run_ids[i], p_epochs[i], p_settlements -> (i - 1))
-- (p_settlements is one JSON array of the items' settlement arrays), with
-- its fence, its checks and its rows exactly as there.  A process that takes
-- over thousands of runs at once settles them together: their settlements
-- go out in one statement and one commit instead of one each.
--
-- It returns a row for each item it recorded, with its place in the arrays
-- (item, from 1), and nothing for a run listed twice, an unknown run, a
-- resumer ticketiq._fence would refuse (another epoch, a run not running, a
-- lapsed lease), or a run whose row another transaction holds locked at that
-- moment (it never waits for a row lock, so it cannot deadlock with a lease
-- renewal that locks the same runs in another order).  Settlements that
-- record_resume would refuse (malformed, TQ007, TQ008) raise their error for
-- the whole statement, which then records nothing.  The caller sends each
-- item left out, or each item of a statement that failed, through
-- ticketiq.record_resume, which records it or raises the documented error;
-- a settlement recorded already changes nothing, so a repeat of this
-- statement after a lost connection records nothing twice.
-- The rows are locked as write_checkpoints locks them (FOR NO KEY UPDATE);
-- each item's fence then takes FOR UPDATE, so a run whose row another
-- transaction holds FOR KEY SHARE (a row inserted elsewhere that refers to
-- it) is waited for there, the group's other rows held meanwhile.  Locking
-- FOR UPDATE here instead left that run out, but in 10,000-run takeovers
-- the statement took 15 and 37 ms instead of 10, and in one of them 146 runs
-- were lost a second time (bench/results_takeover_ab_2026-12-07.txt).
-- Each array is read by position, whatever its subscripts.  The rows are
-- locked (SKIP LOCKED) before the clock is read.
-- Limits:
--   p_run_ids      a one-dimensional array without nulls
--   p_epochs       a one-dimensional array, as long as p_run_ids
--   p_settlements  a JSON array of settlement arrays, as long as p_run_ids
-- SQLSTATEs: TQ004 (arrays of other lengths or dimensions, a null run id,
--   malformed settlements), TQ003 (a lease that lapses between the
--   statement's clock and an item's fence), TQ007 and TQ008 (an item's
--   settlements), as record_resume raises them.
create or replace function ticketiq.record_resumes(
    p_run_ids uuid[],
    p_epochs bigint[],
    p_settlements jsonb
)
returns table (
    item integer,
    run_id uuid,
    step integer,
    loss_count integer,
    audit_id bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz;
    v_n integer := cardinality(p_run_ids);
    v_locked uuid [];
    v_item integer;
    v_run_id uuid;
    v_epoch bigint;
begin
    if coalesce(array_ndims(p_run_ids), 1) <> 1 or coalesce(array_ndims(p_epochs), 1) <> 1 then
        raise exception 'run ids and epochs must be one-dimensional arrays'
            using errcode = 'TQ004';
    end if;
    if p_run_ids is null
        or cardinality(p_epochs) is distinct from v_n
        or jsonb_typeof(p_settlements) is distinct from 'array'
        or jsonb_array_length(p_settlements) is distinct from v_n
        or array_position(p_run_ids, null) is not null then
        raise exception 'run ids, epochs and settlements (a JSON array) must be of equal length, run ids without nulls'
            using errcode = 'TQ004';
    end if;

    -- The runs' rows, locked in run id order, none waited for; then the clock.
    v_locked := ticketiq._lock_runs(p_run_ids);
    v_now := ticketiq.now();

    -- One at a time, in the order given: each item's writes are record_resume's.
    for v_item, v_run_id, v_epoch in
        select g.i::integer, g.run_id, g.epoch
        from (
            select u.i, u.run_id, u.epoch, count(*) over (partition by u.run_id) as listed
            from unnest(p_run_ids, p_epochs) with ordinality as u (run_id, epoch, i)
        ) as g
        where g.listed = 1 and g.run_id = any(v_locked)
        order by g.i
    loop
        -- ticketiq._fence's checks, read without raising (one probe of the run's row
        -- by its key): a fenced or lapsed resumer's item is left out, to go alone for
        -- its error, instead of failing the others.  _record_resume fences it again.
        if exists (
            select 1
            from ticketiq.runs as r
            where r.run_id = v_run_id and r.epoch = v_epoch and r.status = 'running'
                and r.lease_expires_at > v_now
        ) then
            return query
            select v_item, r.run_id, r.step, r.loss_count, r.audit_id
            from ticketiq._record_resume(
                v_run_id, v_epoch, p_settlements -> (v_item - 1), v_now
            ) as r;
        end if;
    end loop;
end;
$$;

comment on function ticketiq.record_resumes(uuid[], bigint[], jsonb) is
'Group commit: the settlements of several resumes in one statement, each as ticketiq.record_resume would record it; a row per item recorded (item: its place in the arrays, from 1), none for a run listed twice, fenced, lapsed or locked at that moment (send those through record_resume); settlements record_resume would refuse raise their error for the whole statement. TQ004 on unequal or multi-dimensional arrays.';
