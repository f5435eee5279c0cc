-- ticketiq.take_over_child(...): a resumed parent takes over its lapsed child, once.
--
-- Fenced by the parent's own epoch (the parent attempt must still own the
-- parent run).  When the child's lease lapsed by the database clock, a
-- compare-and-swap on the child's epoch claims it exactly as a sweep would,
-- through the same body (ticketiq._claim_lapsed: epoch + 1, the loss
-- counted, failed past p_max_losses, audited): of a
-- racing sweep and parent, one wins.  A claimed child (lapsed and swept,
-- or released) is then adopted by p_holder through ticketiq.adopt_run
-- (epoch + 1), audited agent.run.taken_over (with the parent) and
-- returned; no row when the child is alive with another holder, already
-- adopted by someone else, or finished.
-- Limits:
--   p_parent_run_id  the parent run
--   p_parent_epoch   the parent's epoch (the fence)
--   p_child_run_id   a child of the parent
--   p_holder         1..512
--   p_ttl_seconds    seconds in (0, 1e9]
--   p_max_losses     >= 0
-- SQLSTATEs: TQ004 (bad holder, TTL or max losses; not a child of the
--   parent), TQ001, TQ002, TQ003, TQ006 (ticketiq._fence of the parent).
create or replace function ticketiq.take_over_child(
    p_parent_run_id uuid,
    p_parent_epoch bigint,
    p_child_run_id uuid,
    p_holder text,
    p_ttl_seconds double precision,
    p_max_losses integer default 2
)
returns setof ticketiq.adopted_run
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_child ticketiq.runs;
    v_adopted ticketiq.adopted_run;
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    perform ticketiq._require_positive('ttl', p_ttl_seconds);
    if p_max_losses is null or p_max_losses < 0 then
        raise exception 'max_losses must be >= 0' using errcode = 'TQ004';
    end if;
    perform ticketiq._fence('run', p_parent_run_id, p_parent_epoch, v_now);

    select r.* into v_child
    from ticketiq.runs as r
    where r.run_id = p_child_run_id
    for update;
    if not found or v_child.parent_run_id is distinct from p_parent_run_id then
        raise exception 'run % is not a child of run %', p_child_run_id, p_parent_run_id
            using errcode = 'TQ004';
    end if;

    if v_child.status = 'running' and v_child.lease_expires_at <= v_now then
        -- Claimed exactly as a sweep claims it: the same body, for this run.
        perform ticketiq._claim_lapsed(
            'run', p_holder, p_max_losses, 1, p_child_run_id,
            jsonb_build_object('taken_over_by_parent', p_parent_run_id)
        );
        if (select r.status from ticketiq.runs as r where r.run_id = p_child_run_id) <> 'claimed' then
            return;
        end if;
    elsif v_child.status <> 'claimed' then
        return;
    end if;

    for v_adopted in select * from ticketiq.adopt_run(p_holder, p_ttl_seconds, p_child_run_id) loop
        insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
        values (v_now, 'agent.run.taken_over', p_child_run_id, v_adopted.epoch, p_holder,
            jsonb_build_object('parent_run_id', p_parent_run_id, 'parent_epoch', p_parent_epoch));
        return next v_adopted;
    end loop;
end;
$$;

comment on function ticketiq.take_over_child(uuid, bigint, uuid, text, double precision, integer) is
'A resumed parent takes over its child whose lease lapsed (CAS like a sweep, then adopt), once. Fenced by the parent.';
