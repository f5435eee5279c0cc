-- ticketiq._require_run_filters(owner, kind, workflow, statuses, unfinished
-- only, times, limit, max limit): validate the filters of a list of runs.
--
-- The filters ticketiq.list_runs and ticketiq.stop_runs share, checked the
-- same way for both, in this order (the first bad one raises):
--   p_owner, p_kind   null, or 1..512 (ticketiq._require_text)
--   p_workflow        null, or 1..200
--   p_limit           from 1 to p_max_limit
--   p_statuses        null, or a one-dimensional array of run statuses
--                     (running, claimed, suspended, completed, failed,
--                     stopped; with p_unfinished_only the first three only:
--                     a finished run is not stopped)
--   p_times           each null or a finite time
-- SQLSTATEs: TQ004 (the argument and its rule in the message).
create or replace function ticketiq._require_run_filters(
    p_owner text,
    p_kind text,
    p_workflow text,
    p_statuses text[],
    p_unfinished_only boolean,
    p_times timestamptz[],
    p_limit integer,
    p_max_limit integer
)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    perform ticketiq._require_text('owner', p_owner, 512, true);
    perform ticketiq._require_text('kind', p_kind, 512, true);
    perform ticketiq._require_text('workflow', p_workflow, 200, true);
    if p_limit is null or p_limit not between 1 and p_max_limit then
        raise exception 'limit must be 1 to %, got %', p_max_limit, p_limit using errcode = 'TQ004';
    end if;
    if p_statuses is not null and (
        array_ndims(p_statuses) > 1
        or exists (
            select 1 from unnest(p_statuses) as s (v)
            where s.v is null
                or s.v not in ('running', 'claimed', 'suspended', 'completed', 'failed', 'stopped')
                or (p_unfinished_only and s.v not in ('running', 'claimed', 'suspended'))
        )
    ) then
        if p_unfinished_only then
            raise exception 'statuses must be a list of running, claimed, suspended (a finished run is not stopped)'
                using errcode = 'TQ004';
        end if;
        raise exception 'statuses must be a list of running, claimed, suspended, completed, failed, stopped'
            using errcode = 'TQ004';
    end if;
    if 'infinity' = any(p_times) or '-infinity' = any(p_times) then
        raise exception 'times must be finite' using errcode = 'TQ004';
    end if;
end;
$$;

comment on function ticketiq._require_run_filters(text, text, text, text[], boolean, timestamptz[], integer, integer) is
'Validate the run filters list_runs and stop_runs share (owner, kind, workflow, statuses, finite times, limit). TQ004.';
