-- ticketiq.claim_entries(holder, ttl, limit): start runs for pending entries.
--
-- Claims up to p_limit pending entries, the highest priority first, then
-- fairly between owners: each owner's oldest before any owner's second
-- (one owner's backlog of a thousand delays another owner's single entry
-- by one turn at most), then oldest first; an owner with p_owner_limit
-- runs in flight (running, claimed or suspended) gets no more until one
-- ends.  With FOR UPDATE SKIP
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
--   p_owner_limit      null (none), or runs in flight an owner may have, at least 1
-- SQLSTATEs: TQ004 (bad holder, TTL, limit, age or owner limit).
create or replace function ticketiq.claim_entries(
    p_holder text,
    p_ttl_seconds double precision,
    p_limit integer default 10,
    p_min_age_seconds double precision default 0,
    p_owner_limit integer default null
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
    if p_owner_limit is not null and p_owner_limit < 1 then
        raise exception 'owner_limit must be null or >= 1' using errcode = 'TQ004';
    end if;

    for v_entry in
        with waiting as (
            -- each owner's first p_limit, from entries_pending_owner_idx: an owner
            -- beyond them waits for its next turn whatever its backlog
            select w.*
            from (select distinct p.owner from ticketiq.entries as p where p.state = 'pending') as o
            -- an owner's room under its limit: its runs in flight leave the rest
            cross join lateral (
                select case
                    when p_owner_limit is null then p_limit
                    else greatest(p_owner_limit - (
                        select count(*) from ticketiq.runs as r
                        where r.owner = o.owner and r.status in ('running', 'claimed', 'suspended')
                    ), 0)
                end as room
            ) as q
            cross join lateral (
                select
                    e.entry_id, e.priority, e.received_at,
                    row_number() over (order by e.priority desc, e.received_at) as turn
                from ticketiq.entries as e
                where e.state = 'pending' and e.owner = o.owner
                    and e.received_at <= v_now - make_interval(secs => p_min_age_seconds)
                order by e.priority desc, e.received_at
                limit least(p_limit, q.room)
            ) as w
        ),

        picked as (
            select w.entry_id
            from waiting as w
            order by w.priority desc, w.turn, w.received_at
            limit p_limit
        )

        select e.*
        from ticketiq.entries as e
        join picked as p on p.entry_id = e.entry_id
        where e.state = 'pending'
            -- the limits of ticketiq.accept_entry (and so of start_run)
            and length(e.sender_id) <= 512
            and length(e.owner) <= 512
            and length(e.run_as) <= 512
            and length(e.channel) <= 512
        order by e.priority desc, e.received_at
        for update of e skip locked
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

comment on function ticketiq.claim_entries(text, double precision, integer, double precision, integer) is
'Claim pending entries (SKIP LOCKED; by priority, then each owner''s oldest before any owner''s second, an owner at p_owner_limit runs in flight left waiting) and start each one''s run held by p_holder, in one statement.';
