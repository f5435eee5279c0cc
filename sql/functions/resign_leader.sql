-- ticketiq.resign_leader(name, holder): give the leader lease up at once.
--
-- Expires the lease in place if p_holder holds it (keeping its epoch, so
-- the next leader's claim raises it by one) and NOTIFYs channel
-- ticketiq_leader with the lease name, so a follower claims it at once
-- instead of waiting for the lease to lapse.  Returns whether it resigned;
-- resigning a lease not held (or already resigned) returns false.
-- Limits:
--   p_name    compared only, not stored: any text (false when unknown)
--   p_holder  compared only, not stored: any text
-- SQLSTATEs: none.
create or replace function ticketiq.resign_leader(
    p_name text,
    p_holder text
)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_epoch bigint;
begin
    update ticketiq.leader_leases as l
    set expires_at = v_now
    where l.name = p_name and l.holder = p_holder and l.expires_at > v_now
    returning l.epoch into v_epoch;
    if v_epoch is null then
        return false;
    end if;
    insert into ticketiq.audit (at, event, actor, epoch, detail)
    values (v_now, 'leader.resigned', p_holder, v_epoch, jsonb_build_object('name', p_name));
    perform pg_notify('ticketiq_leader', p_name);
    return true;
end;
$$;

comment on function ticketiq.resign_leader(text, text) is
'Give up the leader lease held by p_holder and NOTIFY ticketiq_leader so a follower takes over at once.';
