-- ticketiq.run_transcript(run): what a person reads of a run, in order.
--
-- Each written step (from its checkpoint: the model's text and the calls it
-- asked for) and each transcript entry (resumed, answer, failed, stopped),
-- ordered by time.
-- Limits:
--   p_run_id  any run id
-- SQLSTATEs: TQ001 unknown run.
create or replace function ticketiq.run_transcript(p_run_id uuid)
returns table (
    at timestamptz,
    kind text,
    step integer,
    body jsonb
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if not exists (select 1 from ticketiq.runs as r where r.run_id = p_run_id) then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
    return query
    select t.at, t.kind, t.step, t.body
    from (
        select
            c.written_at as at,
            'step'::text as kind,
            c.step,
            jsonb_build_object(
                'text', c.body -> 'conversation' -> -1 ->> 'content',
                'calls', (
                    select coalesce(jsonb_agg(jsonb_build_object(
                        'call_id', e.value ->> 'call_id',
                        'tool', e.value ->> 'tool',
                        'classification', e.value ->> 'classification',
                        'state', k.state,
                        'settlement', k.settlement
                    ) order by e.ordinality), '[]'::jsonb)
                    from jsonb_array_elements(c.body -> 'calls') with ordinality as e
                    left join ticketiq.calls as k
                        on k.run_id = c.run_id and k.step = c.step
                            and k.call_id = e.value ->> 'call_id'
                )
            ) as body,
            0::bigint as seq
        from ticketiq.checkpoints as c
        where c.run_id = p_run_id
        union all
        select e.at, e.kind, (e.body ->> 'step')::integer, e.body, e.entry_id
        from ticketiq.transcript_entries as e
        where e.run_id = p_run_id
    ) as t
    order by t.at, t.seq;
end;
$$;

comment on function ticketiq.run_transcript(uuid) is
'A run''s steps (from its checkpoints) and transcript entries in time order. TQ001 unknown.';
