-- ticketiq.await_first(run, epoch, group, children, detail): the first of several child runs.
--
-- A workflow step waits for the first of its child runs to end (ctx.first).
-- The group's wait key is first:<run id>:<p_group> (p_group: the step's
-- key).  In one fenced statement (ticketiq._fence) the children join the
-- group (ticketiq.first_waits, once; a run already in another group is
-- refused), and the group's first end is answered if there is one:
--   'first'      the first child to end: the one ticketiq.first_ends
--                recorded (a child's end records it, ticketiq._finish_entry),
--                else the one of the children that ended (finished, or its
--                answer sealed) earliest, by its end and then its place,
--                recorded here.  Written once: every later call, after a
--                crash or on another process, is told the same child;
--   'suspended'  none ended, and the run may wait (runs.may_wait) and is
--                written ahead: it gives its lease up (epoch + 1, suspended
--                on the group's key, agent.run.suspended audited with
--                p_detail).  The first child to end wakes it; the later
--                ones wake nothing;
--   'waiting'    none ended and the run may not wait: it keeps its lease
--                and asks again.
-- The children are locked before they are read: a child ending at this
-- moment is either seen here or sees the group (and wakes the run).
-- Limits:
--   p_run_id    the parent run
--   p_epoch     the writer's epoch
--   p_group     1..600 (the step's key)
--   p_children  a one-dimensional array without nulls of 1 to 64 distinct child
--               runs of p_run_id, in their places
--   p_detail    a JSON object, audited with the suspension (its wait_key,
--               children and step are the system's, whatever it says)
-- SQLSTATEs: TQ004 (bad group, children or detail: none, more than 64, a
--   duplicate, a run that is not this run's child or is in another group),
--   TQ001, TQ002, TQ003, TQ006 (ticketiq._fence).
create or replace function ticketiq.await_first(
    p_run_id uuid,
    p_epoch bigint,
    p_group text,
    p_children uuid[],
    p_detail jsonb default '{}'
)
returns table (
    outcome text,
    child_run_id uuid,
    place integer,
    epoch bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
    v_wait_key text;
    v_count integer := coalesce(cardinality(p_children), 0);
    v_end ticketiq.first_ends;
begin
    perform ticketiq._require_text('group', p_group, 600);
    if v_count < 1 or v_count > 64 or array_ndims(p_children) <> 1 then
        raise exception 'a first-of group is a one-dimensional array of 1 to 64 child runs, not %', v_count
            using errcode = 'TQ004';
    end if;
    if array_position(p_children, null) is not null
        or (select count(distinct c) from unnest(p_children) as c) <> v_count then
        raise exception 'a first-of group names each child run once (no null, no duplicate)'
            using errcode = 'TQ004';
    end if;
    if p_detail is null or jsonb_typeof(p_detail) <> 'object' then
        raise exception 'detail must be a JSON object' using errcode = 'TQ004';
    end if;
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;
    v_wait_key := 'first:' || p_run_id::text || ':' || p_group;

    -- Locked before they are read (in one order: two groups never wait on each other).
    perform 1 from ticketiq.runs as c
    where c.run_id = any(p_children)
    order by c.run_id
    for update;
    if (select count(*) from ticketiq.runs as c
        where c.run_id = any(p_children) and c.parent_run_id = p_run_id) <> v_count then
        raise exception 'each run of a first-of group is a child run of run %', p_run_id
            using errcode = 'TQ004';
    end if;
    insert into ticketiq.first_waits (run_id, parent_run_id, wait_key, place)
    select c.run_id, p_run_id, v_wait_key, (c.ord - 1)::integer
    from unnest(p_children) with ordinality as c (run_id, ord)
    on conflict (run_id) do nothing;
    if exists (
        select 1 from ticketiq.first_waits as w
        where w.run_id = any(p_children) and w.wait_key <> v_wait_key
    ) then
        raise exception 'a child run of run % waits in another first-of group', p_run_id
            using errcode = 'TQ004';
    end if;

    -- The children that ended before they joined: the earliest end is the first.
    insert into ticketiq.first_ends (run_id, wait_key, child_run_id, place, ended_at)
    select p_run_id, v_wait_key, w.run_id, w.place, e.ended_at
    from ticketiq.first_waits as w
    inner join ticketiq.runs as c on w.run_id = c.run_id
    cross join lateral (
        select least(c.finished_at, (
            select a.sealed_at from ticketiq.answers as a where a.run_id = c.run_id
        )) as ended_at
    ) as e
    where w.wait_key = v_wait_key and w.parent_run_id = p_run_id and e.ended_at is not null
    order by e.ended_at, w.place
    limit 1
    on conflict do nothing;

    select f.* into v_end from ticketiq.first_ends as f
    where f.run_id = p_run_id and f.wait_key = v_wait_key;
    if found then
        return query select 'first'::text, v_end.child_run_id, v_end.place, v_run.epoch::bigint;
        return;
    end if;
    if not v_run.may_wait or not v_run.durable then
        return query select 'waiting'::text, null::uuid, null::integer, v_run.epoch::bigint;
        return;
    end if;
    perform ticketiq._suspend(v_run, v_wait_key, 'agent.run.suspended',
        p_detail || jsonb_build_object('children', to_jsonb(p_children)), v_now);
    return query select 'suspended'::text, null::uuid, null::integer, (v_run.epoch + 1)::bigint;
end;
$$;

comment on function ticketiq.await_first(uuid, bigint, text, uuid[], jsonb) is
'The first of several child runs to end (written once), else the run suspends (or, if it may not wait, waits) until one does. Fenced.';
