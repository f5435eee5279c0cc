-- ticketiq._validate_checkpoint(body): check a checkpoint before any write.
--
-- A checkpoint is a JSON object with
--   conversation     array   the conversation so far
--   calls            array   the calls the step asked for, each an object with
--                            call_id (non-empty string, unique in the step),
--                            tool (non-empty string), arguments (object),
--                            classification (read | write | delegation |
--                            remote_agent | subagent_with_tools) and
--                            step_key (string or null; absent means null)
--   counters         object  the run's counters
--   history          array   the run's history
--   delegation_keys  object  delegation keys by call id
-- and optionally outcomes (object: call_id -> outcome of the previous step).
-- Anything else raises TQ004 invalid_payload naming what is wrong.
create or replace function ticketiq._validate_checkpoint(p_body jsonb)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_call jsonb;
    v_index integer := 0;
    v_seen text[] := array[]::text[];
    v_id text;
begin
    if p_body is null or jsonb_typeof(p_body) <> 'object' then
        raise exception 'checkpoint must be a JSON object, got %', coalesce(jsonb_typeof(p_body), 'null')
            using errcode = 'TQ004';
    end if;
    if jsonb_typeof(p_body -> 'conversation') is distinct from 'array' then
        raise exception 'checkpoint.conversation must be an array' using errcode = 'TQ004';
    end if;
    if jsonb_typeof(p_body -> 'calls') is distinct from 'array' then
        raise exception 'checkpoint.calls must be an array' using errcode = 'TQ004';
    end if;
    if jsonb_typeof(p_body -> 'counters') is distinct from 'object' then
        raise exception 'checkpoint.counters must be an object' using errcode = 'TQ004';
    end if;
    if jsonb_typeof(p_body -> 'history') is distinct from 'array' then
        raise exception 'checkpoint.history must be an array' using errcode = 'TQ004';
    end if;
    if jsonb_typeof(p_body -> 'delegation_keys') is distinct from 'object' then
        raise exception 'checkpoint.delegation_keys must be an object' using errcode = 'TQ004';
    end if;
    if p_body ? 'outcomes' and jsonb_typeof(p_body -> 'outcomes') <> 'object' then
        raise exception 'checkpoint.outcomes must be an object when present' using errcode = 'TQ004';
    end if;

    for v_call in select e.value from jsonb_array_elements(p_body -> 'calls') as e loop
        if jsonb_typeof(v_call) <> 'object' then
            raise exception 'checkpoint.calls[%] must be an object', v_index using errcode = 'TQ004';
        end if;
        if jsonb_typeof(v_call -> 'call_id') is distinct from 'string' or v_call ->> 'call_id' = '' then
            raise exception 'checkpoint.calls[%].call_id must be a non-empty string', v_index
                using errcode = 'TQ004';
        end if;
        v_id := v_call ->> 'call_id';
        if v_id = any(v_seen) then
            raise exception 'checkpoint.calls[%].call_id % appears twice in one step', v_index, v_id
                using errcode = 'TQ004';
        end if;
        v_seen := v_seen || v_id;
        if jsonb_typeof(v_call -> 'tool') is distinct from 'string' or v_call ->> 'tool' = '' then
            raise exception 'checkpoint.calls[%].tool must be a non-empty string', v_index
                using errcode = 'TQ004';
        end if;
        if jsonb_typeof(v_call -> 'arguments') is distinct from 'object' then
            raise exception 'checkpoint.calls[%].arguments must be an object', v_index
                using errcode = 'TQ004';
        end if;
        if (v_call ->> 'classification') is null
            or (v_call ->> 'classification') not in (
                'read', 'write', 'delegation', 'remote_agent', 'subagent_with_tools'
            ) then
            raise exception 'checkpoint.calls[%].classification must be one of read, write, delegation, remote_agent, subagent_with_tools', v_index
                using errcode = 'TQ004';
        end if;
        if v_call ? 'step_key' and jsonb_typeof(v_call -> 'step_key') not in ('string', 'null') then
            raise exception 'checkpoint.calls[%].step_key must be a string or null', v_index
                using errcode = 'TQ004';
        end if;
        v_index := v_index + 1;
    end loop;
end;
$$;

comment on function ticketiq._validate_checkpoint(jsonb) is
'Internal: raise TQ004 unless the checkpoint body has conversation, calls, counters, history and delegation_keys of the right shapes.';
