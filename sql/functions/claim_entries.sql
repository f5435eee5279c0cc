-- ticketiq.claim_entries(holder, ttl, limit): start runs for pending entries.
--
-- Claims up to p_limit pending entries, oldest first, with FOR UPDATE SKIP
-- LOCKED (each entry is claimed by exactly one process, however many
-- race), and in the same statement starts each one's run through
-- ticketiq.start_run (idempotency key entry:<entry id>, entry point =
-- kind, input = the payload, run id = the one accept_entry answered),
-- held by p_holder.  From then on the run's
-- lease is the entry's: a process that dies hands the run back through the
-- sweep, and the entry's outcome is recorded when its run ends.
-- p_min_age_seconds leaves younger entries to other processes (a process
-- that should only pick up what others left, e.g. a recovery process).
-- An entry that could not start a run under today's limits (only one
-- accepted before schema 10 can be: a sender id over 512 characters, an
-- identity over 512) is left pending, for an operator, and never stops
-- the others.
-- Limits:
--   p_holder           1..512
--   p_ttl_seconds      seconds in (0, 1e9]
--   p_limit            >= 1
--   p_min_age_seconds  seconds in [0, 1e9]
-- SQLSTATEs: TQ004 (bad holder, TTL, limit or age).
create or replace function ticketiq.claim_entries(
    p_holder text,
    p_ttl_seconds double precision,
    p_limit integer default 10,
    p_min_age_seconds double precision default 0
)
returns table (
    entry_id bigint,
    kind text,
    sender_id text,
    payload jsonb,
    run_id uuid,
    epoch bigint,
    correlation_id text,
    owner text,
    run_as text,
    channel text,
    may_wait boolean,
    durable boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_entry ticketiq.entries;
    v_started record;
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    if p_limit is null or p_limit < 1 or p_min_age_seconds is null
        or not p_min_age_seconds between 0 and 1e9 then
        raise exception 'limit must be >= 1 and min_age 0 to 1000000000 seconds'
            using errcode = 'TQ004';
    end if;
    perform ticketiq._require_positive('ttl', p_ttl_seconds);

    for v_entry in
        select e.*
        from ticketiq.entries as e
        where e.state = 'pending'
            and e.received_at <= v_now - make_interval(secs => p_min_age_seconds)
            -- the limits of ticketiq.accept_entry (and so of start_run)
            and length(e.sender_id) <= 512
            and length(e.owner) <= 512
            and length(e.run_as) <= 512
            and length(e.channel) <= 512
        order by e.received_at
        limit p_limit
        for update skip locked
    loop
        select s.* into v_started
        from ticketiq.start_run(
            p_holder, v_entry.owner, v_entry.run_as, v_entry.channel, v_entry.kind,
            v_entry.may_wait, p_ttl_seconds, v_entry.payload, null,
            -- keyed by the entry: two owners may share a sender id
            'entry:' || v_entry.entry_id,
            jsonb_build_object('entry_id', v_entry.entry_id), v_entry.planned_run_id, null,
            v_entry.durable
        ) as s;
        update ticketiq.entries as e
        set state = 'running',
            run_id = v_started.run_id,
            started_at = v_now
        where e.entry_id = v_entry.entry_id;
        if v_started.created then
            return query select v_entry.entry_id, v_entry.kind, v_entry.sender_id, v_entry.payload,
                v_started.run_id, v_started.epoch, v_started.correlation_id, v_entry.owner,
                v_entry.run_as, v_entry.channel, v_entry.may_wait, v_entry.durable;
        end if;
    end loop;
end;
$$;

comment on function ticketiq.claim_entries(text, double precision, integer, double precision) is
'Claim pending entries (SKIP LOCKED) and start each one''s run held by p_holder, in one statement.';
