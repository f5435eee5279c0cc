-- ticketiq.request_approval(...): file a write held for approval, or find it.
--
-- A changing call whose gate says a person must approve it files one
-- request per call (run, step, call id).  Filing again — a resumed run
-- routing the call again — coalesces with the request already there and
-- returns it, decided or not (coalesced = true), so no second request is
-- ever filed and a decision taken while the process was dead is read, not
-- asked again.  The request is recorded on the call (calls.approval_id).
-- NOTIFYs ticketiq_approval with the approval id when a request is new.
-- Fenced (ticketiq._fence).
-- Limits:
--   p_run_id   the run
--   p_epoch    the writer's epoch
--   p_step     any step (TQ008 unless it has the call)
--   p_call_id  1..256
--   p_summary  a JSON object
-- SQLSTATEs: TQ004 (bad call id or summary, a read), TQ001, TQ002, TQ003,
--   TQ006 (ticketiq._fence), TQ008 no such call.
create or replace function ticketiq.request_approval(
    p_run_id uuid,
    p_epoch bigint,
    p_step integer,
    p_call_id text,
    p_summary jsonb default '{}'
)
returns table (
    approval_id uuid,
    state text,
    coalesced boolean,
    decided_by text,
    decided_at timestamptz,
    reason text
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_call ticketiq.calls;
    v_request ticketiq.approval_requests;
begin
    perform ticketiq._require_text('call_id', p_call_id, 256);
    perform ticketiq._fence('run', p_run_id, p_epoch, v_now);
    if p_summary is null or jsonb_typeof(p_summary) <> 'object' then
        raise exception 'summary must be a JSON object' using errcode = 'TQ004';
    end if;

    select c.* into v_call
    from ticketiq.calls as c
    where c.run_id = p_run_id and c.step = p_step and c.call_id = p_call_id
    for update;
    if not found then
        if exists (
            select 1
            from ticketiq.checkpoints as k
            cross join lateral jsonb_array_elements(k.body -> 'calls') as e
            where k.run_id = p_run_id and k.step = p_step and e.value ->> 'call_id' = p_call_id
        ) then
            raise exception 'call % is a read; reads are not held for approval', p_call_id
                using errcode = 'TQ004';
        end if;
        raise exception 'step % of run % has no call %', p_step, p_run_id, p_call_id
            using errcode = 'TQ008';
    end if;
    if v_call.classification = 'read' and v_call.marked_classification is null then
        raise exception 'call % is a read; reads are not held for approval', p_call_id
            using errcode = 'TQ004';
    end if;

    select a.* into v_request
    from ticketiq.approval_requests as a
    where a.run_id = p_run_id and a.step = p_step and a.call_id = p_call_id;
    if found then
        return query select v_request.approval_id, v_request.state, true, v_request.decided_by,
            v_request.decided_at, v_request.reason;
        return;
    end if;

    insert into ticketiq.approval_requests (
        approval_id, run_id, step, call_id, tool, arguments, summary, requested_at,
        requested_epoch
    ) values (
        gen_random_uuid(), p_run_id, p_step, p_call_id, v_call.tool, v_call.arguments, p_summary,
        v_now, p_epoch
    )
    returning * into v_request;

    update ticketiq.calls as c
    set approval_id = v_request.approval_id
    where c.run_id = p_run_id and c.step = p_step and c.call_id = p_call_id;

    insert into ticketiq.audit (at, event, run_id, epoch, detail)
    values (v_now, 'approval.requested', p_run_id, p_epoch, jsonb_build_object(
        'approval_id', v_request.approval_id, 'step', p_step, 'call_id', p_call_id,
        'tool', v_call.tool
    ));
    -- The run's event stream (migration 0019), the run's row fenced.
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (p_run_id, 'waiting', p_step, p_epoch, jsonb_build_object(
        'for', 'approval', 'approval_id', v_request.approval_id, 'call_id', p_call_id,
        'tool', v_call.tool
    ), v_now);
    perform pg_notify('ticketiq_approval', v_request.approval_id::text);

    return query select v_request.approval_id, 'waiting'::text, false, null::text,
        null::timestamptz, null::text;
end;
$$;

comment on function ticketiq.request_approval(uuid, bigint, integer, text, jsonb) is
'File one approval request per held call, or return the one already filed (coalesced), decided or not. Fenced.';
