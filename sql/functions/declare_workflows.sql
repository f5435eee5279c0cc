-- ticketiq.declare_workflows(process, workflows): what an app process can run.
--
-- Said once by each app process at its start, after ticketiq.register_process
-- and before it adopts a run.  p_workflows is a JSON array, one object per
-- workflow of the process's code: {"name", "version", "kind", "runs",
-- "signals"}: "runs" the versions of the workflow whose runs this code runs
-- (its own version and the earlier ones it stays compatible with),
-- "signals" the names it waits for (null: not declared, any name).  The
-- process's row records {name: runs} (processes.workflows): from then on
-- ticketiq.adopt_run adopts for it only the workflow runs whose first
-- checkpoint names one of these versions, and an empty array (an app with
-- no workflows) adopts no workflow run.  Each (name, version) is recorded
-- in workflow_versions with its kind and signals (the newest declaration
-- wins), which ticketiq.send_signal checks a signal's name against.
-- Returns how many workflows the process declared.
-- Limits:
--   p_process_id  1..512
--   p_workflows   a JSON array of at most 100 objects: name 1..100 and
--                 version 1..100 characters, kind 1..512, runs an array of
--                 1..100 versions of 1..100 characters holding version,
--                 signals null or an array of at most 100 names of 1..200
-- SQLSTATEs: TQ004 (bad process id or declaration), TQ011 (no process has
--   that id).
create or replace function ticketiq.declare_workflows(
    p_process_id text,
    p_workflows jsonb
)
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_flow jsonb;
    v_can jsonb := '{}'::jsonb;
    v_signals text [];
begin
    perform ticketiq._require_text('process_id', p_process_id, 512);
    if p_workflows is null or jsonb_typeof(p_workflows) <> 'array'
        or jsonb_array_length(p_workflows) > 100 then
        raise exception 'workflows must be a JSON array of at most 100 objects'
            using errcode = 'TQ004';
    end if;
    for v_flow in select f.value from jsonb_array_elements(p_workflows) as f (value) loop
        if jsonb_typeof(v_flow) <> 'object'
            or jsonb_typeof(v_flow -> 'name') is distinct from 'string'
            or jsonb_typeof(v_flow -> 'version') is distinct from 'string'
            or jsonb_typeof(v_flow -> 'kind') is distinct from 'string'
            or jsonb_typeof(v_flow -> 'runs') is distinct from 'array'
            or jsonb_typeof(coalesce(v_flow -> 'signals', 'null')) not in ('null', 'array') then
            raise exception 'each workflow is {"name", "version", "kind", "runs", "signals"}'
                using errcode = 'TQ004';
        end if;
        perform ticketiq._require_text('name', v_flow ->> 'name', 100);
        perform ticketiq._require_text('version', v_flow ->> 'version', 100);
        perform ticketiq._require_text('kind', v_flow ->> 'kind', 512);
        if jsonb_array_length(v_flow -> 'runs') not between 1 and 100
            or not (v_flow -> 'runs') @> jsonb_build_array(v_flow -> 'version')
            or exists (
                select 1 from jsonb_array_elements(v_flow -> 'runs') as r (value)
                where jsonb_typeof(r.value) <> 'string' or length(r.value #>> '{}') not between 1 and 100
            ) then
            raise exception 'workflow %: runs is 1 to 100 versions of 1 to 100 characters, its own among them',
                v_flow ->> 'name'
                using errcode = 'TQ004';
        end if;
        if v_can ? (v_flow ->> 'name') then
            raise exception 'workflow % is declared twice', v_flow ->> 'name' using errcode = 'TQ004';
        end if;
        v_signals := null;
        if jsonb_typeof(v_flow -> 'signals') = 'array' then
            if jsonb_array_length(v_flow -> 'signals') > 100 or exists (
                select 1 from jsonb_array_elements(v_flow -> 'signals') as s (value)
                where jsonb_typeof(s.value) <> 'string' or length(s.value #>> '{}') not between 1 and 200
            ) then
                raise exception 'workflow %: signals is at most 100 names of 1 to 200 characters',
                    v_flow ->> 'name'
                    using errcode = 'TQ004';
            end if;
            select coalesce(array_agg(s.value order by s.value), '{}') into v_signals
            from jsonb_array_elements_text(v_flow -> 'signals') as s (value);
        end if;
        v_can := v_can || jsonb_build_object(v_flow ->> 'name', v_flow -> 'runs');
        insert into ticketiq.workflow_versions as w (name, version, kind, signals, declared_at, declared_by)
        values (v_flow ->> 'name', v_flow ->> 'version', v_flow ->> 'kind', v_signals, v_now, p_process_id)
        on conflict (name, version) do update
        set kind = excluded.kind,
            signals = excluded.signals,
            declared_at = excluded.declared_at,
            declared_by = excluded.declared_by;
    end loop;
    update ticketiq.processes as p
    set workflows = v_can
    where p.process_id = p_process_id;
    if not found then
        raise exception 'no app process is registered as %', p_process_id using errcode = 'TQ011';
    end if;
    return jsonb_array_length(p_workflows);
end;
$$;

comment on function ticketiq.declare_workflows(text, jsonb) is
'Record the workflows and versions an app process can run (adopt_run adopts only those) and each version''s kind and signals. TQ004, TQ011.';
