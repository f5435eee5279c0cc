-- ticketiq.claim_leader(name, holder, ttl): become (or stay) the sweep leader.
--
-- Takes the named leader lease when it is free or lapsed by the database
-- clock, or renews it when p_holder holds it already.  Each change of
-- leader raises the lease's epoch by one.  Returns the lease as it stands
-- with is_leader telling whether p_holder holds it.  Leadership only saves
-- work: ticketiq.sweep_lapsed claims each lost run once even if two
-- leaders sweep at the same time.  The lease's row is locked before the
-- clock is read: a claim that waited for it decides by the time after the
-- wait.
-- Limits:
--   p_name         1..512
--   p_holder       1..512
--   p_ttl_seconds  seconds in (0, 1e9]
-- SQLSTATEs: TQ004 (bad name, holder or TTL).
create or replace function ticketiq.claim_leader(
    p_name text,
    p_holder text,
    p_ttl_seconds double precision
)
returns table (
    is_leader boolean,
    holder text,
    epoch bigint,
    expires_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz;
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
    v_lease ticketiq.leader_leases;
begin
    perform ticketiq._require_text('name', p_name, 512);
    perform ticketiq._require_text('holder', p_holder, 512);
    -- The row first, then the clock (a first claim of the name has no row to lock).
    perform 1 from ticketiq.leader_leases as l where l.name = p_name for update;
    v_now := ticketiq.now();

    insert into ticketiq.leader_leases as l (name, holder, epoch, acquired_at, expires_at)
    values (p_name, p_holder, 1, v_now, v_now + v_ttl)
    on conflict (name) do update
    set holder = excluded.holder,
        epoch = case
            when l.holder = excluded.holder and l.expires_at > v_now then l.epoch
            else l.epoch + 1
        end,
        acquired_at = case
            when l.holder = excluded.holder and l.expires_at > v_now then l.acquired_at
            else v_now
        end,
        expires_at = excluded.expires_at
    where l.holder = excluded.holder or l.expires_at <= v_now
    returning l.* into v_lease;

    if v_lease.name is null then
        select l.* into v_lease from ticketiq.leader_leases as l where l.name = p_name;
        return query select false, v_lease.holder, v_lease.epoch, v_lease.expires_at;
        return;
    end if;
    if v_lease.acquired_at = v_now then
        insert into ticketiq.audit (at, event, actor, epoch, detail)
        values (v_now, 'leader.claimed', p_holder, v_lease.epoch, jsonb_build_object('name', p_name));
    end if;
    return query select true, v_lease.holder, v_lease.epoch, v_lease.expires_at;
end;
$$;

comment on function ticketiq.claim_leader(text, text, double precision) is
'Take the named leader lease when free or lapsed (epoch + 1), or renew it for its holder; is_leader says who holds it.';
