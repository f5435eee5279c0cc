-- ticketiq.record_attempt(run, epoch, step, target, error): count one failed attempt.
--
-- The runner retries a model step or a tool call that failed transiently;
-- it records each failed attempt here before it tries again.  p_target is
-- 'model' for the model step or the tool call's id.  Returns how many failed
-- attempts that target has had at that step across every epoch of the run:
-- the count lives in ticketiq.attempts, not in the process, so a crash in
-- the middle of retrying does not reset it and a resumed attempt goes on
-- from it.  p_error is kept as the last error, cut to 2,000 characters.
-- One upsert: two sessions recording at once both count.  Not idempotent:
-- each call counts one more failure.  Fenced (ticketiq._fence).  A
-- rejected call writes nothing.
-- Limits:
--   p_run_id  the run
--   p_epoch   the writer's epoch
--   p_step    >= 1
--   p_target  1..256 ('model' or a call id)
--   p_error   not empty; any length, kept cut to 2000 characters
-- SQLSTATEs: TQ004 (bad step, target or error), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence).
create or replace function ticketiq.record_attempt(
    p_run_id uuid,
    p_epoch bigint,
    p_step integer,
    p_target text,
    p_error text
)
returns table (
    run_id uuid,
    step integer,
    target text,
    attempts integer
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
begin
    if p_step is null or p_step < 1 then
        raise exception 'step must be >= 1, got %', coalesce(p_step::text, 'null')
            using errcode = 'TQ004';
    end if;
    if coalesce(p_target, '') = '' or length(p_target) > 256 then
        raise exception 'target must be 1 to 256 characters, got %',
            coalesce(length(p_target)::text, 'null')
            using errcode = 'TQ004';
    end if;
    if coalesce(p_error, '') = '' then
        raise exception 'error must be non-empty' using errcode = 'TQ004';
    end if;
    perform ticketiq._fence('run', p_run_id, p_epoch, v_now);

    return query
    insert into ticketiq.attempts as a (
        run_id, step, target, attempts, last_error, first_at, last_at
    ) values (
        p_run_id, p_step, p_target, 1, left(p_error, 2000), v_now, v_now
    )
    on conflict (run_id, step, target) do update
    set attempts = a.attempts + 1,
        last_error = excluded.last_error,
        last_at = greatest(a.last_at, excluded.last_at)
    returning a.run_id, a.step, a.target, a.attempts;
end;
$$;

comment on function ticketiq.record_attempt(uuid, bigint, integer, text, text) is
'Count one failed attempt of a target (''model'' or a call id) at a step; returns the count across epochs (fenced). TQ001-TQ004, TQ006.';
