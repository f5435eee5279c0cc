-- ticketiq._step_calls(runs, epochs, steps, bodies, now): the calls rows of written checkpoints.
--
-- The one definition, for write_checkpoint and write_checkpoints, of what a
-- checkpoint written for step s of a run does to ticketiq.calls (element i
-- of the arrays is one checkpoint; p_bodies is one JSON array of the bodies):
--   * the changing calls of step s - 1 are closed: their results are in
--     step s's conversation (body.outcomes may carry them per call id); a
--     call marked in doubt becomes made, a changing call never marked is
--     settled as skipped, since it cannot have been made (I5);
--   * one row is recorded per changing call of step s (a read needs no row:
--     it is never marked, and made again on resume; the checkpoint itself
--     lists every call), sealed pending with the seal the body's call_seals
--     gives for it (the runner's, under the checkpoint's key; the stored
--     checkpoint leaves call_seals out).
-- Called in the checkpoint's own transaction, after its fenced write, and
-- only when there is something to close or record (each of its statements
-- costs an executor start even when it touches no row).
create or replace function ticketiq._step_calls(
    p_run_ids uuid[],
    p_epochs bigint[],
    p_steps integer[],
    p_bodies jsonb,
    p_now timestamptz
)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    with written as (
        select u.run_id, u.epoch, u.step, p_bodies -> (u.i - 1)::integer as body
        from unnest(p_run_ids, p_epochs, p_steps) with ordinality as u (run_id, epoch, step, i)
    ),

    closed as (
        update ticketiq.calls as c
        set state = case
                when c.state = 'pending' and c.classification <> 'read' then 'settled' else 'done'
            end,
            settlement = case
                when c.state = 'pending' and c.classification <> 'read' then 'skipped' else 'made'
            end,
            outcome = w.body -> 'outcomes' -> c.call_id,
            finished_at = p_now,
            finished_epoch = w.epoch
        from written as w
        where c.run_id = w.run_id
            and c.step = w.step - 1
            and c.state in ('pending', 'in_doubt')
    )

    insert into ticketiq.calls (
        run_id, step, call_id, ordinal, tool, arguments, classification, step_key, seal,
        seal_key_id
    )
    select
        w.run_id,
        w.step,
        e.value ->> 'call_id',
        e.ordinality::integer,
        e.value ->> 'tool',
        e.value -> 'arguments',
        e.value ->> 'classification',
        e.value ->> 'step_key',
        w.body -> 'call_seals' ->> (e.value ->> 'call_id'),
        case when w.body -> 'call_seals' ? (e.value ->> 'call_id') then k.seal_key_id::text end
    from written as w
    inner join ticketiq.checkpoints as k on k.run_id = w.run_id and k.step = w.step
    cross join lateral jsonb_array_elements(w.body -> 'calls') with ordinality as e
    where e.value ->> 'classification' <> 'read';
end;
$$;

comment on function ticketiq._step_calls(uuid[], bigint[], integer[], jsonb, timestamptz) is
'Internal: for checkpoints just written (step s of each run), close the changing calls of step s - 1 and record one calls row per changing call of step s.';
