-- ticketiq.accept_entry(...): write an incoming request to the durable inbox.
--
-- Every entry point (a webhook or ticket-event delivery, a Teams activity,
-- an A2A task, a co-pilot turn, a playground run, a cron fire) is written
-- here before it is answered, keyed by (kind, owner, sender id): a request
-- the edge retries on the other process finds the entry already there
-- (created = false) with its run, and starts nothing.  Sender ids are the
-- owner's own: another owner's same id is another entry, never this one.  run_id is the id
-- the entry's run has, or will have once an entry pump claims it (chosen
-- here, so a caller learns it at once).  The kinds are the app's.  NOTIFYs
-- ticketiq_entry so an entry worker claims it at once (its poll is the
-- truth).  p_durable false: the run will not be written ahead (lost, it is
-- failed, not resumed).  p_priority orders the runs waiting to start
-- (ticketiq.claim_entries).  Nothing is written for a call refused.
-- Limits:
--   p_kind       1..64: a lowercase letter, then lowercase letters, digits, _ . -
--   p_sender_id  1..512 bytes of UTF-8 (128 four-byte characters): with the
--                owner's 512 characters it fits the index of (kind, owner,
--                sender id)
--   p_payload    a JSON object
--   p_owner      1..512
--   p_run_as     1..512
--   p_channel    1..512
--   p_may_wait   not null
--   p_durable    not null
--   p_priority   a number from -1000 to 1000 (higher starts first)
-- SQLSTATEs: TQ004 (bad input).
create or replace function ticketiq.accept_entry(
    p_kind text,
    p_sender_id text,
    p_payload jsonb,
    p_owner text,
    p_run_as text,
    p_channel text,
    p_may_wait boolean default false,
    p_durable boolean default true,
    p_priority integer default 0
)
returns table (
    entry_id bigint,
    created boolean,
    state text,
    run_id uuid
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_entry ticketiq.entries;
begin
    perform ticketiq._require_kind(p_kind);
    perform ticketiq._require_bytes('sender_id', p_sender_id, 512);
    perform ticketiq._require_text('owner', p_owner, 512);
    perform ticketiq._require_text('run_as', p_run_as, 512);
    perform ticketiq._require_text('channel', p_channel, 512);
    if p_payload is null or jsonb_typeof(p_payload) <> 'object' then
        raise exception 'the payload must be a JSON object' using errcode = 'TQ004';
    end if;
    if p_may_wait is null or p_durable is null then
        raise exception 'may_wait and durable are required' using errcode = 'TQ004';
    end if;
    if p_priority is null or p_priority not between -1000 and 1000 then
        raise exception 'priority must be -1000..1000' using errcode = 'TQ004';
    end if;

    insert into ticketiq.entries as e (
        kind, sender_id, payload, owner, run_as, channel, may_wait, durable, received_at, priority
    ) values (
        p_kind, p_sender_id, p_payload, p_owner, p_run_as, p_channel, p_may_wait, p_durable, v_now,
        p_priority
    )
    on conflict (kind, owner, sender_id) do nothing
    returning e.* into v_entry;
    if v_entry.entry_id is not null then
        perform pg_notify('ticketiq_entry', v_entry.entry_id::text);
        return query select v_entry.entry_id, true, v_entry.state, v_entry.planned_run_id;
        return;
    end if;
    return query
    select e.entry_id, false, e.state, coalesce(e.run_id, e.planned_run_id)
    from ticketiq.entries as e
    where e.kind = p_kind and e.owner = p_owner and e.sender_id = p_sender_id;
end;
$$;

comment on function ticketiq.accept_entry(text, text, jsonb, text, text, text, boolean, boolean, integer) is
'Write a request to the durable inbox keyed by (kind, owner, sender id of at most 512 bytes); a retry finds the owner''s entry (created=false); run_id is known at once. TQ004 bad input.';
