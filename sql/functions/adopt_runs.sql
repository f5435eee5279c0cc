-- ticketiq.adopt_runs(holder, ttl, limit): adopt up to p_limit claimed runs at once.
--
-- The batch form of ticketiq.adopt_run, for a process that takes over many
-- runs together (a dead peer's thousand): the runs are chosen as
-- ticketiq.adopt_run chooses one (ticketiq._adoptable: the oldest claimed
-- first, FOR UPDATE SKIP LOCKED) and adopted as it adopts one
-- (ticketiq._adopt: epoch + 1, the lease to p_holder for p_ttl_seconds,
-- audited), all in one statement and one commit, so of several resume workers each
-- claimed run goes to exactly one (I2, I3).  Returns one row per run
-- adopted, as ticketiq.adopt_run returns it; no row when nothing is
-- claimed.  At most 1000 runs are adopted by one call, whatever p_limit
-- says.  The caller verifies each seal before executing anything (I9).
-- Limits:
--   p_holder       1..512
--   p_ttl_seconds  seconds in (0, 1e9]
--   p_limit        >= 1
-- SQLSTATEs: TQ004 (bad holder, TTL or limit), TQ003 (as ticketiq.adopt_run: a TTL
--   so short a new lease lapsed within the statement: nothing adopted).
create or replace function ticketiq.adopt_runs(
    p_holder text,
    p_ttl_seconds double precision,
    p_limit integer default 100
)
returns setof ticketiq.adopted_run
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    if p_limit is null or p_limit < 1 then
        raise exception 'limit must be >= 1' using errcode = 'TQ004';
    end if;
    -- Chosen in one query and adopted set-wide: a thousand single adoptions
    -- cost the server 0.5 ms a run (bench section 8).
    return query
    select a.* from ticketiq._adopt(p_holder, v_ttl, array(
        select c.run_id
        from ticketiq._adoptable(p_holder, null, least(p_limit, 1000)) with ordinality as c (run_id, n)
        order by c.n
    )) as a;
end;
$$;

comment on function ticketiq.adopt_runs(text, double precision, integer) is
'Adopt up to p_limit claimed runs in one statement, each as ticketiq.adopt_run does (SKIP LOCKED, epoch + 1, lease to p_holder), and return them.';
