-- ticketiq._checkpoint_ok(body): whether a checkpoint body is well formed.
--
-- The rules of ticketiq._validate_checkpoint (the shape is documented
-- there), tested more cheaply: true when every rule holds, false otherwise,
-- never an error.  The checks are simple expressions and one JSON path over
-- the calls; only a step with two calls or more runs a query (call ids must
-- not repeat).  ticketiq.write_checkpoint calls _validate_checkpoint (for
-- its message) only when this says false; ticketiq.write_checkpoints leaves
-- such a body out of its batch.  A pgTAP test holds the two functions to
-- the same answer on every shape and on a mutation of each field.
create or replace function ticketiq._checkpoint_ok(p_body jsonb)
returns boolean
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if not coalesce(
        jsonb_typeof(p_body) = 'object'
        and jsonb_typeof(p_body -> 'conversation') = 'array'
        and jsonb_typeof(p_body -> 'calls') = 'array'
        and jsonb_typeof(p_body -> 'counters') = 'object'
        and jsonb_typeof(p_body -> 'history') = 'array'
        and jsonb_typeof(p_body -> 'delegation_keys') = 'object'
        and coalesce(jsonb_typeof(p_body -> 'outcomes'), 'object') = 'object'
        and coalesce(p_body ->> 'chain', 'base') in ('base', 'link')
        and coalesce(jsonb_typeof(p_body -> 'chain'), 'string') = 'string'
        and coalesce(jsonb_typeof(p_body -> 'call_seals'), 'object') = 'object'
        and not jsonb_path_exists(
            p_body,
            '$.call_seals.* ? (!(@.type() == "string" && @ != ""
                && !(@ like_regex "^.{250}.{250}.{250}.{250}.{25}" flag "s")))'
        )
        -- every call an object: .type() does not unwrap a call that is itself
        -- an array, where the filter below would test its elements instead
        and not jsonb_path_exists(p_body, '$.calls[*].type() ? (@ != "object")')
        -- every call well formed: in lax mode a failed comparison is unknown,
        -- so each one is guarded by a type test that is plainly false first
        and not jsonb_path_exists(
            p_body,
            '$.calls[*] ? (!(@.type() == "object"
                && @.call_id.type() == "string" && @.call_id != ""
                && !(@.call_id like_regex "^.{200}.{57}" flag "s")
                && @.tool.type() == "string" && @.tool != ""
                && @.arguments.type() == "object"
                && @.classification.type() == "string"
                && (@.classification == "read" || @.classification == "write"
                    || @.classification == "delegation" || @.classification == "remote_agent"
                    || @.classification == "subagent_with_tools")
                && (!exists(@.step_key) || @.step_key.type() == "string"
                    || @.step_key.type() == "null")))'
        ),
        false
    ) then
        return false;
    end if;
    if jsonb_array_length(p_body -> 'calls') < 2 then
        return true;
    end if;
    return (
        select count(distinct c.value ->> 'call_id') = count(*)
        from jsonb_array_elements(p_body -> 'calls') as c
    );
end;
$$;

comment on function ticketiq._checkpoint_ok(jsonb) is
'Internal: true when a checkpoint body is well formed (the rules of ticketiq._validate_checkpoint), false otherwise; never raises.';
