-- ticketiq.upsert_cron_schedule(...): create or change a cron schedule.
--
-- A schedule fires every p_every_seconds; its first fire is at p_first_at
-- (default: now).  Changing an existing schedule keeps its next fire
-- time unless p_first_at is given (it must be, when the one kept is past
-- p_first_at's limit).  A schedule that could never fire is refused, so
-- one schedule cannot stop ticketiq.fire_due_crons (and the inbox behind
-- it); so is a first fire a client cannot read back.  PostgreSQL keeps
-- times from 4713 BC to 294276 AD, Python's datetime (ticketiq_pg's
-- CronSchedule and CronFire) from year 1 to 9999; the limit stays a day
-- inside those years in any session time zone.  Such a time, once stored,
-- failed in the client (after the statement committed) every later
-- upsert that kept it.
-- Limits:
--   p_name           1..256 (its fires' sender ids are <name>@<fire time>)
--   p_every_seconds  seconds in [1, 1e9]
--   p_payload        a JSON object
--   p_owner          1..512
--   p_run_as         1..512
--   p_channel        1..512
--   p_first_at       a finite time from 0001-01-02 to 9999-12-31 (UTC), or null
--                    (now, or the next fire kept)
--   p_enabled        true or false
-- SQLSTATEs: TQ004 (bad input, naming the field).
create or replace function ticketiq.upsert_cron_schedule(
    p_name text,
    p_every_seconds double precision,
    p_payload jsonb,
    p_owner text,
    p_run_as text,
    p_channel text default 'cron',
    p_first_at timestamptz default null,
    p_enabled boolean default true
)
returns table (
    name text,
    next_fire_at timestamptz,
    enabled boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_first timestamptz;
begin
    perform ticketiq._require_text('name', p_name, 256);
    if p_every_seconds is null or not p_every_seconds between 1 and 1e9 then
        raise exception 'every must be 1 to 1000000000 seconds, got %',
            coalesce(p_every_seconds::text, 'null')
            using errcode = 'TQ004';
    end if;
    perform ticketiq._require_text('owner', p_owner, 512);
    perform ticketiq._require_text('run_as', p_run_as, 512);
    perform ticketiq._require_text('channel', p_channel, 512);
    if p_enabled is null then
        raise exception 'enabled must be true or false' using errcode = 'TQ004';
    end if;
    v_first := coalesce(
        p_first_at,
        (select c.next_fire_at from ticketiq.cron_schedules as c where c.name = p_name),
        v_now
    );
    if not v_first between '0001-01-02 00:00:00+00'::timestamptz
        and '9999-12-31 00:00:00+00'::timestamptz then
        raise exception 'first_at must be a finite time from 0001-01-02 to 9999-12-31 UTC, got %',
            v_first using errcode = 'TQ004';
    end if;
    if p_payload is null or jsonb_typeof(p_payload) <> 'object' then
        raise exception 'the payload must be a JSON object' using errcode = 'TQ004';
    end if;
    insert into ticketiq.cron_schedules as c (
        name, every_seconds, next_fire_at, payload, owner, run_as, channel, enabled
    ) values (
        p_name, p_every_seconds, v_first, p_payload, p_owner, p_run_as,
        p_channel, p_enabled
    )
    on conflict (name) do update
    set every_seconds = excluded.every_seconds,
        next_fire_at = coalesce(p_first_at, c.next_fire_at),
        payload = excluded.payload,
        owner = excluded.owner,
        run_as = excluded.run_as,
        channel = excluded.channel,
        enabled = excluded.enabled;
    return query
    select c.name, c.next_fire_at, c.enabled from ticketiq.cron_schedules as c where c.name = p_name;
end;
$$;

comment on function ticketiq.upsert_cron_schedule(
    text, double precision, jsonb, text, text, text, timestamptz, boolean
) is
'Create or change a cron schedule firing every p_every_seconds (1 to 1e9), first at a time '
'from 0001-01-02 to 9999-12-31 UTC. TQ004 bad input.';
