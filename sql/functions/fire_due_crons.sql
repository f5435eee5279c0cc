-- ticketiq.fire_due_crons(durable, limit): turn due cron fires into entries.
--
-- For each enabled schedule due by the database clock (FOR UPDATE SKIP
-- LOCKED: any process may call it; each fire happens once), writes one
-- entry of kind 'cron' whose sender id is <name>@<fire time> — so a fire
-- is a row claimed once across processes — and moves the schedule to its
-- next fire time on its grid (missed fires are not replayed in a burst).  p_durable
-- false: cron runs are not written ahead (TICKETIQ_CRASH_RESUME_ENTRIES).
-- Returns the fires written.  Only schedules that can fire are read, by
-- the rules ticketiq.upsert_cron_schedule enforces (a finite next fire,
-- every 1 to 1e9 seconds, a name and an identity within their limits): a
-- schedule written before schema 10 that breaks them (migration 10
-- disabled those it found) is never fired and never stops the others, so
-- the inbox is not held up behind it.  Every schedule read fires without
-- error (its next fire is at most 1e9 seconds after now).
-- Limits:
--   p_durable  true or false
--   p_limit    >= 1
-- SQLSTATEs: TQ004 (bad limit or durable).
create or replace function ticketiq.fire_due_crons(
    p_durable boolean default true,
    p_limit integer default 100
)
returns table (
    name text,
    fire_at timestamptz,
    entry_id bigint
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_schedule ticketiq.cron_schedules;
    v_next timestamptz;
    v_entry record;
begin
    if p_limit is null or p_limit < 1 or p_durable is null then
        raise exception 'limit must be >= 1 and durable given' using errcode = 'TQ004';
    end if;
    for v_schedule in
        select c.*
        from ticketiq.cron_schedules as c
        where c.enabled and c.next_fire_at <= v_now
            and isfinite(c.next_fire_at)
            and c.every_seconds between 1 and 1e9
            and length(c.name) <= 256
            and length(c.owner) <= 512
            and length(c.run_as) <= 512
            and length(c.channel) <= 512
        order by c.next_fire_at
        limit p_limit
        for update skip locked
    loop
        select a.* into v_entry
        from ticketiq.accept_entry(
            'cron', v_schedule.name || '@' || v_schedule.next_fire_at::text,
            v_schedule.payload || jsonb_build_object(
                'cron', v_schedule.name, 'fire_at', v_schedule.next_fire_at
            ),
            v_schedule.owner, v_schedule.run_as, v_schedule.channel, false, p_durable
        ) as a;
        -- The next fire on the schedule's own grid after now.
        v_next := v_schedule.next_fire_at + make_interval(secs => v_schedule.every_seconds * (
            floor(extract(epoch from v_now - v_schedule.next_fire_at) / v_schedule.every_seconds) + 1
        ));
        update ticketiq.cron_schedules as c
        set next_fire_at = v_next
        where c.name = v_schedule.name;
        return query select v_schedule.name, v_schedule.next_fire_at, v_entry.entry_id;
    end loop;
end;
$$;

comment on function ticketiq.fire_due_crons(boolean, integer) is
'Write one cron entry per due schedule (each fire once, SKIP LOCKED) and advance it; returns the fires.';
