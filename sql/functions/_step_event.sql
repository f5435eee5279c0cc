-- ticketiq._step_event(body): the body of a step_written event, from the
-- step's checkpoint body.
--
-- What a client watching the run is told of a written step: the model's
-- whole text of the step (the last message of the checkpoint's conversation:
-- the text it may have streamed in pieces, as it stands) and the calls it
-- asked for, each by call id, tool and classification (their arguments stay
-- in the checkpoint).  Called by ticketiq.run_events_after on the stored
-- checkpoint of each step_written event it reads (the checkpoint passed
-- ticketiq._checkpoint_ok when it was written: the calls are an array of
-- objects); the event's row carries no copy, so a step costs its writer
-- neither this body nor its WAL (docs/performance.md section 21).
-- PL/pgSQL, not SQL: a SQL function with a pinned search_path is planned
-- again at every call (never inlined).
-- Limits:
--   p_body  a checkpoint body that passed ticketiq._checkpoint_ok
-- SQLSTATEs: none.
create or replace function ticketiq._step_event(p_body jsonb)
returns jsonb
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    return jsonb_build_object(
        'text', case when jsonb_typeof(p_body -> 'conversation' -> -1 -> 'content') = 'string'
            then p_body -> 'conversation' -> -1 -> 'content' else to_jsonb(''::text) end,
        'calls', coalesce((
            select jsonb_agg(jsonb_build_object(
                'call_id', c.value -> 'call_id',
                'tool', c.value -> 'tool',
                'classification', c.value -> 'classification'
            ) order by c.ordinality)
            from jsonb_array_elements(p_body -> 'calls') with ordinality as c
        ), '[]'::jsonb)
    );
end;
$$;

comment on function ticketiq._step_event(jsonb) is
'Internal: the body of a step_written event (the step''s text and its calls by id, tool and classification) from a checkpoint body.';
