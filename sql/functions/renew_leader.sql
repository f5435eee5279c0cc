-- ticketiq.renew_leader(name, holder, epoch, ttl): keep the leader lease.
--
-- Extends the lease only while p_holder holds it at p_epoch and it has not
-- lapsed by the database clock; returns false otherwise, and the caller
-- stops acting as leader.  The lease's row is locked before the clock is
-- read: a renewal that waited for it decides by the time after the wait.
-- Limits:
--   p_name         compared only, not stored: any text (false when unknown)
--   p_holder       compared only, not stored: any text
--   p_epoch        the leader's epoch
--   p_ttl_seconds  seconds in (0, 1e9]
-- SQLSTATEs: TQ004 (bad TTL).
create or replace function ticketiq.renew_leader(
    p_name text,
    p_holder text,
    p_epoch bigint,
    p_ttl_seconds double precision
)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz;
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
begin
    perform 1 from ticketiq.leader_leases as l where l.name = p_name for update;
    v_now := ticketiq.now();
    update ticketiq.leader_leases as l
    set expires_at = v_now + v_ttl
    where l.name = p_name
        and l.holder = p_holder
        and l.epoch = p_epoch
        and l.expires_at > v_now;
    return found;
end;
$$;

comment on function ticketiq.renew_leader(text, text, bigint, double precision) is
'Extend the leader lease while the holder still holds it unlapsed at that epoch; false means leadership is lost.';
