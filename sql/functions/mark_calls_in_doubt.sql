-- ticketiq.mark_calls_in_doubt(run, epoch, step, marks): mark the changing calls of
-- a step in doubt together, just before they are made together.
--
-- One statement for all the changing calls a step makes at once: each element
-- of p_marks is marked as ticketiq.mark_in_doubt marks one call (same fence,
-- same checks, same SQLSTATEs, same idempotence: a call marked again returns
-- its first mark), in the order given, and either every mark is written or
-- none is (a refused element aborts the statement).  Returns one row per
-- element, in that order; stop_requested tells the caller a Stop was asked:
-- it must make none of them.
-- Limits:
--   p_run_id  the run
--   p_epoch   the writer's epoch
--   p_step    the run's last step
--   p_marks   a JSON array of 1..256 objects, each {"call_id": 1..256
--             characters, "classification": null or as mark_in_doubt's,
--             "seal": null or 1..1024, "seal_key_id": null or 1..512}; a
--             call id at most once
-- SQLSTATEs: TQ004 (p_marks not such an array, a repeated call id, or any
--   element mark_in_doubt refuses as TQ004), and those of
--   ticketiq.mark_in_doubt: TQ001, TQ002, TQ003, TQ006, TQ005, TQ007, TQ008.
create or replace function ticketiq.mark_calls_in_doubt(
    p_run_id uuid,
    p_epoch bigint,
    p_step integer,
    p_marks jsonb
)
returns table (
    run_id uuid,
    step integer,
    call_id text,
    state text,
    marked_classification text,
    step_key text,
    marked_at timestamptz,
    already_marked boolean,
    stop_requested boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_mark jsonb;
begin
    if p_marks is null or jsonb_typeof(p_marks) <> 'array'
        or jsonb_array_length(p_marks) not between 1 and 256 then
        raise exception 'marks must be a JSON array of 1 to 256 calls' using errcode = 'TQ004';
    end if;
    if exists (
        select 1 from jsonb_array_elements(p_marks) as e (value)
        where jsonb_typeof(e.value) <> 'object'
            or jsonb_typeof(e.value -> 'call_id') is distinct from 'string'
            or coalesce(jsonb_typeof(e.value -> 'classification'), 'null') not in ('string', 'null')
            or coalesce(jsonb_typeof(e.value -> 'seal'), 'null') not in ('string', 'null')
            or coalesce(jsonb_typeof(e.value -> 'seal_key_id'), 'null') not in ('string', 'null')
    ) then
        raise exception 'each mark must be an object with a call_id and text or null '
            'classification, seal and seal_key_id' using errcode = 'TQ004';
    end if;
    if (select count(distinct e.value ->> 'call_id') from jsonb_array_elements(p_marks) as e (value))
        <> jsonb_array_length(p_marks) then
        raise exception 'a call is marked at most once a statement' using errcode = 'TQ004';
    end if;

    for v_mark in select e.value from jsonb_array_elements(p_marks) as e (value) loop
        return query select m.run_id, m.step, m.call_id, m.state, m.marked_classification,
            m.step_key, m.marked_at, m.already_marked, m.stop_requested
        from ticketiq.mark_in_doubt(
            p_run_id, p_epoch, p_step, v_mark ->> 'call_id', v_mark ->> 'classification',
            v_mark ->> 'seal', v_mark ->> 'seal_key_id'
        ) as m;
    end loop;
end;
$$;

comment on function ticketiq.mark_calls_in_doubt(uuid, bigint, integer, jsonb) is
'Mark the changing calls a step makes at once in doubt, in one statement: each as mark_in_doubt marks one, all or none. TQ001-TQ008.';
