-- ticketiq.upsert_cron_schedule(...): create or change a cron schedule.
--
-- A schedule fires every p_every_seconds; its first fire is at p_first_at
-- (default: now).  Changing an existing schedule keeps its next fire
-- time unless p_first_at is given.  TQ004 for a bad name, interval,
-- payload or identity.
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
begin
    perform ticketiq._require_positive('every', p_every_seconds);
    if coalesce(p_name, '') = '' or coalesce(p_owner, '') = '' or coalesce(p_run_as, '') = ''
        or coalesce(p_channel, '') = '' or p_enabled is null then
        raise exception 'name, owner, run_as, channel and enabled are required'
            using errcode = 'TQ004';
    end if;
    if p_payload is null or jsonb_typeof(p_payload) <> 'object' then
        raise exception 'the payload must be a JSON object' using errcode = 'TQ004';
    end if;
    insert into ticketiq.cron_schedules as c (
        name, every_seconds, next_fire_at, payload, owner, run_as, channel, enabled
    ) values (
        p_name, p_every_seconds, coalesce(p_first_at, v_now), p_payload, p_owner, p_run_as,
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
'Create or change a cron schedule firing every p_every_seconds. TQ004 bad input.';
