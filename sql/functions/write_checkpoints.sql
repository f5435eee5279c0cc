-- ticketiq.write_checkpoints(...): the write-ahead checkpoints of several
-- runs' steps in one statement (group commit).
--
-- The arrays are read in parallel: element i is one call of
-- ticketiq.write_checkpoint(p_run_ids[i], p_epochs[i], p_steps[i],
-- p_bodies -> (i - 1), p_seals[i], p_seal_key_ids[i]) (p_bodies is one JSON
-- array of the bodies, cheaper to send than a jsonb[]), with its fence, its step
-- order, its sealed-answer check and its calls rows (ticketiq._step_calls,
-- only when some checkpoint has calls to close or record), exactly as there.  One
-- process whose runs step at the same moment writes their checkpoints with
-- one statement and one commit instead of one each.
--
-- It returns a row for each checkpoint it wrote, with its place in the
-- arrays (item, from 1), and nothing for the others:
-- a malformed body or seal, a fenced writer, a lapsed lease, a step out of
-- order, a repeat of a written step, a sealed answer, a run listed twice,
-- or a run whose row another transaction holds locked at that moment (it
-- never waits for a row lock, so it cannot deadlock with a lease renewal
-- that locks the same runs in another order).  The caller sends each of
-- those through ticketiq.write_checkpoint, which writes it, recognises the
-- repeat, or raises the documented error; a repeat of this whole statement
-- after a lost connection therefore writes nothing twice.
-- Each array is read by position, whatever its subscripts (a '[2:3]={...}'
-- array is read as its two items, item 1 and 2).  The rows are locked
-- (SKIP LOCKED) before the clock is read.
-- Limits:
--   p_run_ids       a one-dimensional array without nulls
--   p_epochs        a one-dimensional array, as long as p_run_ids
--   p_steps         a one-dimensional array, as long as p_run_ids
--   p_bodies        a JSON array of checkpoint bodies, as long as p_run_ids
--   p_seals         a one-dimensional array, as long as p_run_ids (an item
--                   over 1024 characters is left out)
--   p_seal_key_ids  a one-dimensional array, as long as p_run_ids (an item
--                   over 512 characters is left out)
-- SQLSTATEs: TQ004 (arrays of other lengths or dimensions, a null run id).
create or replace function ticketiq.write_checkpoints(
    p_run_ids uuid[],
    p_epochs bigint[],
    p_steps integer[],
    p_bodies jsonb,
    p_seals text[],
    p_seal_key_ids text[]
)
returns table (
    item integer,
    run_id uuid,
    step integer,
    written_at timestamptz,
    lease_expires_at timestamptz,
    stop_requested boolean
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
    v_items integer [];
    v_run_ids uuid [];
    v_epochs bigint [];
    v_steps integer [];
    v_bodies jsonb;
    v_expires timestamptz [];
    v_stops boolean [];
    v_calls boolean;
begin
    if coalesce(array_ndims(p_run_ids), 1) <> 1 or coalesce(array_ndims(p_epochs), 1) <> 1
        or coalesce(array_ndims(p_steps), 1) <> 1 or coalesce(array_ndims(p_seals), 1) <> 1
        or coalesce(array_ndims(p_seal_key_ids), 1) <> 1 then
        raise exception 'run ids, epochs, steps, seals and seal key ids must be one-dimensional arrays'
            using errcode = 'TQ004';
    end if;
    if p_run_ids is null
        or cardinality(p_epochs) is distinct from v_n
        or cardinality(p_steps) is distinct from v_n
        or jsonb_typeof(p_bodies) is distinct from 'array'
        or jsonb_array_length(p_bodies) is distinct from v_n
        or cardinality(p_seals) is distinct from v_n
        or cardinality(p_seal_key_ids) is distinct from v_n
        or array_position(p_run_ids, null) is not null then
        raise exception 'run ids, epochs, steps, bodies (a JSON array), seals and seal key ids must be arrays of equal length, run ids without nulls'
            using errcode = 'TQ004';
    end if;

    -- The runs' rows, locked in run id order, none waited for; then the clock.
    v_locked := ticketiq._lock_runs(p_run_ids);
    v_now := ticketiq.now();

    -- One statement writes what passes: the fenced UPDATE of each run and,
    -- hanging off it, its checkpoint; it gathers the rows written (by their
    -- places in the arrays, counted from 1, never by subscript) and whether
    -- any of them has calls to close or record.
    with given as (
        select g.i, g.run_id, g.epoch, g.step, g.body, g.seal, g.seal_key_id
        from (
            select
                u.i, u.run_id, u.epoch, u.step, p_bodies -> (u.i - 1)::integer as body, u.seal,
                u.seal_key_id, count(*) over (partition by u.run_id) as listed
            from unnest(p_run_ids, p_epochs, p_steps, p_seals, p_seal_key_ids)
                with ordinality as u (run_id, epoch, step, seal, seal_key_id, i)
        ) as g
        where g.listed = 1
            and g.run_id = any(v_locked)
            and coalesce(length(g.seal), 0) between 1 and 1024
            and coalesce(length(g.seal_key_id), 0) between 1 and 512
            and ticketiq._checkpoint_ok(g.body)
    ),

    fenced as (
        update ticketiq.runs as r
        set last_step = g.step
        from given as g
        where r.run_id = g.run_id
            and r.epoch = g.epoch
            and r.status = 'running'
            and r.lease_expires_at > v_now
            and r.last_step + 1 = g.step
            and not exists (select 1 from ticketiq.answers as a where a.run_id = g.run_id)
        returning
            g.i, r.run_id, g.epoch, g.step, g.body, g.seal, g.seal_key_id,
            r.lease_expires_at, r.stop_requested_at
    ),

    written as (
        insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id, written_at)
        select
            f.run_id, f.step, f.epoch,
            -- the pending rows' seals go on the rows, not in the checkpoint
            case when f.body ? 'call_seals' then f.body - 'call_seals' else f.body end,
            f.seal, f.seal_key_id, v_now
        from fenced as f
    ),

    -- The runs' event streams (migration 0019); each event's body is its
    -- checkpoint's, read by ticketiq.run_events_after (as write_checkpoint).
    evented as (
        insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
        select f.run_id, 'step_written', f.step, f.epoch, '{}'::jsonb, v_now
        from fenced as f
    )

    select
        coalesce(array_agg(f.i::integer order by f.i), '{}'),
        coalesce(array_agg(f.run_id order by f.i), '{}'),
        coalesce(array_agg(f.epoch order by f.i), '{}'),
        coalesce(array_agg(f.step order by f.i), '{}'),
        coalesce(jsonb_agg(f.body order by f.i), '[]'),
        coalesce(array_agg(f.lease_expires_at order by f.i), '{}'),
        coalesce(array_agg(f.stop_requested_at is not null order by f.i), '{}'),
        coalesce(bool_or(
            exists (
                select 1 from ticketiq.calls as c
                where c.run_id = f.run_id
                    and c.step = f.step - 1
                    and c.state in ('pending', 'in_doubt')
            )
            or jsonb_path_exists(f.body, '$.calls[*] ? (@.classification != "read")')
        ), false)
    into v_items, v_run_ids, v_epochs, v_steps, v_bodies, v_expires, v_stops, v_calls
    from fenced as f;

    if v_calls then
        perform ticketiq._step_calls(v_run_ids, v_epochs, v_steps, v_bodies, v_now);
    end if;

    return query
    select v_items[k], v_run_ids[k], v_steps[k], v_now, v_expires[k], v_stops[k]
    from generate_subscripts(v_items, 1) as k
    order by k;
end;
$$;

comment on function ticketiq.write_checkpoints(uuid[], bigint[], integer[], jsonb, text[], text[]) is
'Group commit: the checkpoints of several runs in one statement, each as ticketiq.write_checkpoint would write it; a row per checkpoint written (item: its place in the arrays, from 1), none for the rest (send those through write_checkpoint). TQ004 on unequal or multi-dimensional arrays.';
