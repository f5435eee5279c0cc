-- ticketiq.run_events_after(run, after, limit): a run's durable events after
-- the event id p_after, oldest first.
--
-- What a client watching the run reads: every event the run committed after
-- the last one it saw (p_after 0: from the start), at most p_limit.  The
-- run's events are written under its row lock, one transaction at a time
-- (migration 0019), so reading after an id never skips one committed later.
-- A run with no events yet (not started) answers no rows; an unknown run
-- raises.  The caller's right to see the run is the front's to judge, as
-- for the run itself.
-- Limits:
--   p_run_id  any run id
--   p_after   0 or more (an event id)
--   p_limit   a number of events, from 1 to 1000
-- SQLSTATEs: TQ001 unknown run, TQ004 a negative p_after or a limit outside
--   1..1000.
create or replace function ticketiq.run_events_after(
    p_run_id uuid,
    p_after bigint default 0,
    p_limit integer default 1000
)
returns table (
    event_id bigint,
    kind text,
    step integer,
    epoch bigint,
    body jsonb,
    at timestamptz
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if p_after is null or p_after < 0 then
        raise exception 'after must be an event id of 0 or more, not %', coalesce(p_after::text, 'null')
            using errcode = 'TQ004';
    end if;
    if p_limit is null or p_limit not between 1 and 1000 then
        raise exception 'limit must be 1..1000, not %', coalesce(p_limit::text, 'null')
            using errcode = 'TQ004';
    end if;
    -- A step_written row carries no body: the step's text and calls are
    -- its checkpoint's (ticketiq.write_checkpoint), read here.  A row of
    -- schema 23 or before carries its own.
    return query
    select
        e.event_id, e.kind, e.step, e.epoch,
        case when e.kind = 'step_written' and e.body = '{}'::jsonb and k.body is not null
            then ticketiq._step_event(k.body) else e.body end,
        e.at
    from ticketiq.run_events as e
    left join ticketiq.checkpoints as k
        on e.kind = 'step_written' and k.run_id = e.run_id and k.step = e.step
    where e.run_id = p_run_id and e.event_id > p_after
    order by e.event_id
    limit p_limit;
    if not found and not exists (select 1 from ticketiq.runs as r where r.run_id = p_run_id) then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
end;
$$;

comment on function ticketiq.run_events_after(uuid, bigint, integer) is
'A run''s durable events after event id p_after, oldest first, at most p_limit (1..1000); TQ001 unknown run, TQ004 bad arguments.';
