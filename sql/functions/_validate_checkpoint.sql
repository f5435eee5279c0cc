-- ticketiq._validate_checkpoint(body): check a checkpoint before any write.
--
-- A checkpoint is a JSON object with
--   conversation     array   the conversation so far
--   calls            array   the calls the step asked for, each an object with
--                            call_id (string of 1 to 256 characters, unique
--                            in the step),
--                            tool (non-empty string), arguments (object),
--                            classification (read | write | delegation |
--                            remote_agent | subagent_with_tools) and
--                            step_key (string or null; absent means null)
--   counters         object  the run's counters
--   history          array   the run's history
--   delegation_keys  object  delegation keys by call id
-- and optionally outcomes (object: call_id -> outcome of the previous step)
-- and call_seals (object: call_id -> the seal, 1 to 1024 characters, of
-- that call's pending row; stored on the row, not in the checkpoint) and
-- chain ('base' or 'link': what the step added, after a base that holds
-- the whole conversation so far; see ticketiq.adopt_run).
-- Anything else raises TQ004 invalid_payload naming what is wrong.  The
-- calls are checked in one set-based query; the message is worked out only
-- for a body that fails it.  ticketiq._checkpoint_ok tests the same rules
-- more cheaply and without raising; write_checkpoint asks it first and
-- calls this function only for a body it refuses (a pgTAP test holds the
-- two to the same answer on every shape).
create or replace function ticketiq._validate_checkpoint(p_body jsonb)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_position bigint;
    v_value jsonb;
    v_repeats boolean;
    v_what text;
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
    if p_body ? 'chain' and (
        jsonb_typeof(p_body -> 'chain') <> 'string' or p_body ->> 'chain' not in ('base', 'link')
    ) then
        raise exception 'checkpoint.chain must be base or link when present' using errcode = 'TQ004';
    end if;
    if p_body ? 'call_seals' and (
        jsonb_typeof(p_body -> 'call_seals') <> 'object'
        or exists (
            select 1 from jsonb_each(p_body -> 'call_seals') as e
            where jsonb_typeof(e.value) <> 'string' or length(e.value #>> '{}') not between 1 and 1024
        )
    ) then
        raise exception 'checkpoint.call_seals must be an object of seals (1 to 1024 characters) when present'
            using errcode = 'TQ004';
    end if;
    if jsonb_array_length(p_body -> 'calls') = 0 then
        return;
    end if;

    -- One set-based pass over the calls: the first bad call, if any, and
    -- whether a call id repeats.
    select
        (array_agg(e.ordinality - 1 order by e.ordinality) filter (where not e.ok))[1],
        (array_agg(e.value order by e.ordinality) filter (where not e.ok))[1],
        count(distinct e.value ->> 'call_id') <> count(*)
    into v_position, v_value, v_repeats
    from (
        select c.value, c.ordinality, coalesce(
            jsonb_typeof(c.value) = 'object'
            and jsonb_typeof(c.value -> 'call_id') = 'string' and c.value ->> 'call_id' <> ''
            and length(c.value ->> 'call_id') <= 256
            and jsonb_typeof(c.value -> 'tool') = 'string' and c.value ->> 'tool' <> ''
            and jsonb_typeof(c.value -> 'arguments') = 'object'
            and c.value ->> 'classification' in (
                'read', 'write', 'delegation', 'remote_agent', 'subagent_with_tools'
            )
            and coalesce(jsonb_typeof(c.value -> 'step_key'), 'null') in ('string', 'null'),
            false
        ) as ok
        from jsonb_array_elements(p_body -> 'calls') with ordinality as c
    ) as e;
    if v_position is not null then
        v_what := case
            when jsonb_typeof(v_value) <> 'object' then ' must be an object'
            when jsonb_typeof(v_value -> 'call_id') is distinct from 'string'
                or v_value ->> 'call_id' = '' then '.call_id must be a non-empty string'
            when length(v_value ->> 'call_id') > 256 then '.call_id must be 1 to 256 characters'
            when jsonb_typeof(v_value -> 'tool') is distinct from 'string'
                or v_value ->> 'tool' = '' then '.tool must be a non-empty string'
            when jsonb_typeof(v_value -> 'arguments') is distinct from 'object'
                then '.arguments must be an object'
            when (v_value ->> 'step_key') is not null
                and jsonb_typeof(v_value -> 'step_key') <> 'string'
                then '.step_key must be a string or null'
            else '.classification must be one of read, write, delegation, remote_agent, '
                || 'subagent_with_tools'
        end;
        raise exception 'checkpoint.calls[%]%', v_position, v_what using errcode = 'TQ004';
    end if;
    if v_repeats then
        raise exception 'checkpoint.calls: a call_id appears twice in one step'
            using errcode = 'TQ004';
    end if;
end;
$$;

comment on function ticketiq._validate_checkpoint(jsonb) is
'Internal: raise TQ004 unless the checkpoint body has conversation, calls, counters, history and delegation_keys of the right shapes.';
