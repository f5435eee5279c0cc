-- ticketiq._event_outcome(outcome): the outcome part of a call_settled event.
--
-- A run's event stream (ticketiq.run_events, migration 0019) carries a
-- settled call's outcome while it is small: {"outcome": outcome} up to 4096
-- bytes (pg_column_size), {"outcome_omitted": true} past that (a reader
-- gets the whole outcome from the call's row).  The one rule for the
-- events ticketiq.record_outcome and ticketiq.record_resume write.  PL/pgSQL:
-- a SQL function with a pinned search_path is not inlined and is planned at
-- every call.  No SQLSTATE.
create or replace function ticketiq._event_outcome(
    p_outcome jsonb
)
returns jsonb
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    return case when pg_column_size(p_outcome) <= 4096 then jsonb_build_object('outcome', p_outcome)
        else '{"outcome_omitted": true}'::jsonb end;
end;
$$;

comment on function ticketiq._event_outcome(jsonb) is
'The outcome part of a call_settled event: {"outcome": ...} up to 4096 bytes, {"outcome_omitted": true} past that.';
