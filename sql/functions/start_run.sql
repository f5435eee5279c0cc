-- ticketiq.start_run(...): write a run, its lease and its entry point together.
--
-- The new run is 'running' at epoch 1 and its holder (an app process id)
-- holds the lease checkpoint:<run id> for p_ttl_seconds from now by the
-- database clock.  p_idempotency_key (a sender's id: webhook delivery,
-- Teams activity, A2A task) makes a retried start find the existing run:
-- then created is false and epoch is null, since the caller is not its owner.
-- p_durable false: the run is not written ahead; lost, it is failed
-- ('interrupted'), never resumed (TICKETIQ_CRASH_RESUME_ENTRIES=false).
-- p_parent_run_id makes it the child run of a delegation; the delegation
-- key is then its idempotency key, so asking again finds the same child.
-- Limits:
--   p_holder           1..512
--   p_owner            1..512
--   p_run_as           1..512
--   p_channel          1..512
--   p_entry_point      1..512
--   p_may_wait         true or false
--   p_ttl_seconds      seconds in (0, 1e9]
--   p_input            any JSON value, not SQL null
--   p_correlation_id   null (the run id), or 1..512
--   p_idempotency_key  null, or 1..600
--   p_meta             a JSON object
--   p_run_id           null (a new id), or an id no run has
--   p_parent_run_id    null, or an existing run
--   p_durable          true or false
-- SQLSTATEs: TQ004 (bad input), TQ007 p_run_id exists, TQ001 p_parent_run_id
--   names no run.
create or replace function ticketiq.start_run(
    p_holder text,
    p_owner text,
    p_run_as text,
    p_channel text,
    p_entry_point text,
    p_may_wait boolean,
    p_ttl_seconds double precision,
    p_input jsonb default '{}',
    p_correlation_id text default null,
    p_idempotency_key text default null,
    p_meta jsonb default '{}',
    p_run_id uuid default null,
    p_parent_run_id uuid default null,
    p_durable boolean default true
)
returns table (
    run_id uuid,
    epoch bigint,
    lease_expires_at timestamptz,
    created boolean,
    correlation_id text
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_ttl interval := ticketiq._require_positive('ttl', p_ttl_seconds);
    v_run_id uuid := coalesce(p_run_id, gen_random_uuid());
    v_existing ticketiq.runs;
begin
    perform ticketiq._require_text('holder', p_holder, 512);
    perform ticketiq._require_text('owner', p_owner, 512);
    perform ticketiq._require_text('run_as', p_run_as, 512);
    perform ticketiq._require_text('channel', p_channel, 512);
    perform ticketiq._require_text('entry_point', p_entry_point, 512);
    perform ticketiq._require_text('correlation_id', p_correlation_id, 512, true);
    perform ticketiq._require_text('idempotency_key', p_idempotency_key, 600, true);
    if p_may_wait is null or p_input is null or p_durable is null then
        raise exception 'may_wait and input must not be null' using errcode = 'TQ004';
    end if;
    if p_meta is null or jsonb_typeof(p_meta) <> 'object' then
        raise exception 'meta must be a JSON object' using errcode = 'TQ004';
    end if;

    if p_parent_run_id is not null
        and not exists (select 1 from ticketiq.runs as r where r.run_id = p_parent_run_id) then
        raise exception 'unknown parent run %', p_parent_run_id using errcode = 'TQ001';
    end if;

    if p_idempotency_key is not null then
        select r.* into v_existing
        from ticketiq.runs as r
        where r.idempotency_key = p_idempotency_key;
        if found then
            return query select v_existing.run_id, null::bigint, null::timestamptz, false,
                v_existing.correlation_id::text;
            return;
        end if;
    end if;
    if exists (select 1 from ticketiq.runs as r where r.run_id = v_run_id) then
        raise exception 'run % already exists', v_run_id using errcode = 'TQ007';
    end if;

    begin
        insert into ticketiq.runs (
            run_id, owner, run_as, channel, entry_point, may_wait, correlation_id,
            idempotency_key, input, meta, status, epoch, lease_holder, lease_expires_at,
            created_at, updated_at, parent_run_id, durable
        ) values (
            v_run_id, p_owner, p_run_as, p_channel, p_entry_point, p_may_wait,
            coalesce(p_correlation_id, v_run_id::text), p_idempotency_key, p_input, p_meta,
            'running', 1, p_holder, v_now + v_ttl, v_now, v_now, p_parent_run_id, p_durable
        );
    exception when unique_violation then
        -- A concurrent start with the same sender id won the race.
        select r.* into v_existing
        from ticketiq.runs as r
        where r.idempotency_key = p_idempotency_key;
        if not found then
            raise;
        end if;
        return query select v_existing.run_id, null::bigint, null::timestamptz, false,
            v_existing.correlation_id::text;
        return;
    end;

    insert into ticketiq.audit (at, event, run_id, epoch, actor, detail)
    values (v_now, 'agent.run.started', v_run_id, 1, p_holder, jsonb_build_object(
        'entry_point', p_entry_point, 'channel', p_channel, 'owner', p_owner,
        'may_wait', p_may_wait, 'parent_run_id', p_parent_run_id
    ));
    -- The run's event stream (migration 0019): its first event.
    insert into ticketiq.run_events (run_id, kind, step, epoch, body, at)
    values (v_run_id, 'started', 0, 1, jsonb_build_object(
        'entry_point', p_entry_point, 'channel', p_channel, 'parent_run_id', p_parent_run_id
    ), v_now);

    return query select v_run_id, 1::bigint, v_now + v_ttl, true,
        coalesce(p_correlation_id, v_run_id::text);
end;
$$;

comment on function ticketiq.start_run(
    text, text, text, text, text, boolean, double precision, jsonb, text, text, jsonb, uuid, uuid,
    boolean
) is
'Start a run holding lease checkpoint:<run id> at epoch 1; a repeated idempotency key returns the existing run (created=false, epoch null). TQ004 bad input, TQ007 run id exists.';
