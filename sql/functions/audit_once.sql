-- ticketiq.audit_once(run, epoch, event, key, detail): audit something once per run.
--
-- Writes one ticketiq.audit row (p_event, the run, p_epoch, the lease holder
-- as actor, p_detail with "key": p_key added) at most once per (run, event,
-- key) for the run's whole life, whichever epoch asks: the runner audits,
-- once per run, a changing call whose guarantee is downgraded (no step key,
-- or a route that can be neither resent nor read back).  A second call with
-- the same (run, event, key) writes nothing and returns the first row's
-- audit_id with inserted = false.
--
-- Once-only under races: the key is claimed in the side table
-- ticketiq.audit_once_keys, whose primary key is (run_id, event, key), in
-- the same statement that writes the audit row, the audit_id drawn first
-- from the audit table's own sequence; a key already there (ON CONFLICT DO
-- NOTHING) writes no audit row.  A session racing another first waits for
-- the run's row (ticketiq._fence); under READ COMMITTED it then finds the
-- key and returns its audit_id, under REPEATABLE READ (whose snapshot
-- cannot see that key) the insert fails with 40001 rather than write the
-- row twice.  A side table rather than a unique index on audit: the other
-- audit rows, and their inserts, stay as they are.  The
-- keys go with their run (on delete cascade), so ticketiq.purge_history
-- takes them with the run and its audit rows.
--
-- Fenced (ticketiq._fence); a rejected call writes nothing.
-- Limits:
--   p_run_id  the run
--   p_epoch   the writer's epoch
--   p_event   agent.run.<lower-case name>, at most 200 characters
--   p_key     1..256
--   p_detail  a JSON object
-- SQLSTATEs: TQ004 (bad event, key or detail), TQ001, TQ002, TQ003, TQ006
--   (ticketiq._fence), 40001 (a race lost under REPEATABLE READ).
create or replace function ticketiq.audit_once(
    p_run_id uuid,
    p_epoch bigint,
    p_event text,
    p_key text,
    p_detail jsonb
)
returns table (
    audit_id bigint,
    inserted boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_run ticketiq.runs;
    v_audit_id bigint;
begin
    if p_event is null or length(p_event) > 200 or p_event !~ '^agent\.run\.[a-z_]+$' then
        raise exception 'event must be an agent.run.* name, got %', coalesce(left(p_event, 200), 'null')
            using errcode = 'TQ004';
    end if;
    if coalesce(p_key, '') = '' or length(p_key) > 256 then
        raise exception 'key must be 1 to 256 characters, got %', coalesce(length(p_key)::text, 'null')
            using errcode = 'TQ004';
    end if;
    if p_detail is null or jsonb_typeof(p_detail) <> 'object' then
        raise exception 'detail must be a JSON object' using errcode = 'TQ004';
    end if;
    v_run := (ticketiq._fence('run', p_run_id, p_epoch, v_now)).run;

    with claimed as (
        insert into ticketiq.audit_once_keys as k (run_id, event, key, audit_id)
        values (
            p_run_id, p_event, p_key,
            nextval(pg_get_serial_sequence('ticketiq.audit', 'audit_id'))
        )
        on conflict (run_id, event, key) do nothing
        returning k.audit_id
    ),

    written as (
        insert into ticketiq.audit as a (audit_id, at, event, run_id, epoch, actor, detail)
        overriding system value
        select c.audit_id, v_now, p_event, p_run_id, p_epoch, v_run.lease_holder,
            p_detail || jsonb_build_object('key', p_key)
        from claimed as c
        returning a.audit_id
    )

    select w.audit_id into v_audit_id from written as w;
    if v_audit_id is not null then
        return query select v_audit_id, true;
        return;
    end if;

    select k.audit_id into v_audit_id
    from ticketiq.audit_once_keys as k
    where k.run_id = p_run_id and k.event = p_event and k.key = p_key;
    return query select v_audit_id, false;
end;
$$;

comment on function ticketiq.audit_once(uuid, bigint, text, text, jsonb) is
'Write an audit row at most once per (run, event, key) for the run''s life; a repeat returns the first audit_id, inserted false (fenced). TQ001-TQ004, TQ006.';
