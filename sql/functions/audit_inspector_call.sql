-- ticketiq.audit_inspector_call(actor, run, tool, digest, key, outcome, detail):
-- audit an operator's ad hoc call of one of the app's tools (the inspector).
--
-- A person's call outside every run (ticketiq_pg.runtime.inspector) writes
-- one ticketiq.audit row: event inspector.call with who made it (actor), the
-- run whose page it was made from (or null), and detail holding the tool, the
-- SHA-256 digest of its arguments (never the arguments themselves), its fresh
-- key and its outcome.  A changing call is audited twice: outcome 'sent'
-- (event inspector.call_sent) before it is sent, so a process that dies
-- during the call leaves the key of a call whose outcome nobody knows, and
-- its outcome once it returns.  Nothing of the run is changed: the call is
-- shown as the run's context, never written into its checkpoints.  Not
-- fenced: the caller is a person, not a lease holder.
-- Limits:
--   p_actor             1..512
--   p_run_id            null, or a run that exists
--   p_tool              1..200
--   p_arguments_digest  64 lower-case hex digits (sha256)
--   p_step_key          1..256
--   p_outcome           sent, made, refused, failed, not_applied, read_back, unknown
--   p_detail            a JSON object (more to say: a refusal's reason)
-- SQLSTATEs: TQ004 (a bad argument), TQ001 unknown run.
create or replace function ticketiq.audit_inspector_call(
    p_actor text,
    p_run_id uuid,
    p_tool text,
    p_arguments_digest text,
    p_step_key text,
    p_outcome text,
    p_detail jsonb default '{}'
)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := ticketiq.now();
    v_audit_id bigint;
begin
    perform ticketiq._require_text('actor', p_actor, 512);
    perform ticketiq._require_text('tool', p_tool, 200);
    perform ticketiq._require_text('step_key', p_step_key, 256);
    if p_arguments_digest is null or p_arguments_digest !~ '^[0-9a-f]{64}$' then
        raise exception 'arguments_digest must be 64 lower-case hex digits' using errcode = 'TQ004';
    end if;
    if p_outcome is null
        or p_outcome not in ('sent', 'made', 'refused', 'failed', 'not_applied', 'read_back', 'unknown') then
        raise exception 'unknown inspector outcome %', coalesce(left(p_outcome, 40), 'null')
            using errcode = 'TQ004';
    end if;
    if p_detail is null or jsonb_typeof(p_detail) <> 'object' then
        raise exception 'detail must be a JSON object' using errcode = 'TQ004';
    end if;
    if p_run_id is not null and not exists (
        select from ticketiq.runs as r where r.run_id = p_run_id
    ) then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
    insert into ticketiq.audit (at, event, run_id, actor, detail)
    values (
        v_now,
        case when p_outcome = 'sent' then 'inspector.call_sent' else 'inspector.call' end,
        p_run_id, p_actor,
        p_detail || jsonb_build_object(
            'tool', p_tool, 'arguments_digest', p_arguments_digest, 'key', p_step_key,
            'outcome', p_outcome
        )
    )
    returning audit_id into v_audit_id;
    return v_audit_id;
end;
$$;

comment on function ticketiq.audit_inspector_call(text, uuid, text, text, text, text, jsonb) is
'Audit an operator''s ad hoc call of a tool (inspector.call, or inspector.call_sent before a changing call is sent); not fenced. TQ001, TQ004.';
