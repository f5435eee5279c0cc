-- ticketiq.purge_answers(limit): delete sealed answers past their retention.
--
-- Deletes at most p_limit answers whose retain_until has passed by the
-- database clock and that were handed on or whose run finished, and returns
-- how many it deleted.  Schedule it (cron, pg_cron) as often as you like:
-- it finds the answers past their retention through answers_retain_until_idx
-- (schema 10), so its cost does not grow with the answers kept.
-- Limits:
--   p_limit  >= 1
-- SQLSTATEs: TQ004 (bad limit).
create or replace function ticketiq.purge_answers(p_limit integer default 1000)
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_count integer;
begin
    if p_limit is null or p_limit < 1 then
        raise exception 'limit must be >= 1' using errcode = 'TQ004';
    end if;
    with doomed as (
        select a.run_id
        from ticketiq.answers as a
        inner join ticketiq.runs as r on a.run_id = r.run_id
        where a.retain_until <= v_now and r.finished_at is not null
        order by a.retain_until
        limit p_limit
        for update of a skip locked
    )

    delete from ticketiq.answers as a
    using doomed as d
    where a.run_id = d.run_id;
    get diagnostics v_count = row_count;
    return v_count;
end;
$$;

comment on function ticketiq.purge_answers(integer) is
'Delete up to p_limit sealed answers past retain_until whose runs finished; returns how many.';
