-- ticketiq.now(): the one clock every lease decision uses.
--
-- Returns clock_timestamp() of the database server.  Tests may move the
-- clock with the setting ticketiq.fake_now (a timestamptz literal), but only
-- in a database whose ticketiq.config.fake_clock_allowed is true; elsewhere
-- the setting is ignored, so no session can stretch a lease by faking time.
-- SECURITY DEFINER: the app and operator roles may call it without reading
-- ticketiq.config themselves.
-- SQLSTATEs: none.
create or replace function ticketiq.now()
returns timestamptz
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_fake text := nullif(current_setting('ticketiq.fake_now', true), '');
begin
    if v_fake is null then
        return clock_timestamp();
    end if;
    if (select c.fake_clock_allowed from ticketiq.config as c where c.id) then
        return v_fake::timestamptz;
    end if;
    return clock_timestamp();
end;
$$;

comment on function ticketiq.now() is
'The database clock for every lease decision: clock_timestamp(), or ticketiq.fake_now where config.fake_clock_allowed (tests only).';
