-- ticketiq.decide_approval(approval, approve, actor, reason): a person decides.
--
-- Not fenced: a person decides whether or not the run's process is alive.
-- Moves a waiting request to approved or rejected, audits it and NOTIFYs
-- ticketiq_approval with the approval id, so the waiting run (or the one
-- that resumes it) reads the decision; a run suspended on the request
-- (wait key approval:<id>) is woken.  Deciding the same way again returns
-- the stored decision; deciding the other way raises TQ007 step_conflict.
-- Limits:
--   p_approval_id  the approval request
--   p_approve      true or false
--   p_actor        1..512
--   p_reason       null, or at most 2000 characters
-- SQLSTATEs: TQ004 (bad actor, decision or reason), TQ009 unknown approval,
--   TQ007 decided the other way already.
create or replace function ticketiq.decide_approval(
    p_approval_id uuid,
    p_approve boolean,
    p_actor text,
    p_reason text default null
)
returns table (
    approval_id uuid,
    run_id uuid,
    state text,
    decided_by text,
    decided_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_request ticketiq.approval_requests;
    v_state text;
begin
    perform ticketiq._require_text('actor', p_actor, 512);
    perform ticketiq._require_text('reason', p_reason, 2000, true, 0);
    if p_approve is null then
        raise exception 'a decision needs approve true or false' using errcode = 'TQ004';
    end if;
    v_state := case when p_approve then 'approved' else 'rejected' end;

    select a.* into v_request
    from ticketiq.approval_requests as a
    where a.approval_id = p_approval_id
    for update;
    if not found then
        raise exception 'unknown approval request %', p_approval_id using errcode = 'TQ009';
    end if;
    if v_request.state <> 'waiting' then
        if v_request.state = v_state then
            return query select v_request.approval_id, v_request.run_id, v_request.state,
                v_request.decided_by, v_request.decided_at;
            return;
        end if;
        raise exception 'approval request % was already %', p_approval_id, v_request.state
            using errcode = 'TQ007';
    end if;

    update ticketiq.approval_requests as a
    set state = v_state,
        decided_at = v_now,
        decided_by = p_actor,
        reason = p_reason
    where a.approval_id = p_approval_id;

    insert into ticketiq.audit (at, event, run_id, actor, detail)
    values (v_now, 'approval.' || v_state, v_request.run_id, p_actor, jsonb_build_object(
        'approval_id', p_approval_id, 'step', v_request.step, 'call_id', v_request.call_id,
        'reason', p_reason
    ));
    perform pg_notify('ticketiq_approval', p_approval_id::text);
    perform ticketiq._wake('approval:' || p_approval_id::text, v_now);

    return query select p_approval_id, v_request.run_id, v_state, p_actor, v_now;
end;
$$;

comment on function ticketiq.decide_approval(uuid, boolean, text, text) is
'A person approves or rejects a held call (not fenced); NOTIFYs ticketiq_approval. TQ009 unknown, TQ007 decided otherwise.';
