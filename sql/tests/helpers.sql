-- pgTAP helpers for the ticketiq test suite (schema tiq_test).
--
-- Installed once per test database, outside the test transactions, after the
-- ticketiq schema, its functions, sql/grants.sql and `create extension pgtap`
-- (scripts/run_pgtap.py does this).  No psql backslash commands and no
-- transaction control: the file is sent whole as one query.
--
-- Every helper is meant to be called by the test superuser, inside the test
-- file's own transaction, which rolls everything back.  Settings are set with
-- is_local = true, so they end with that transaction as well.

create schema if not exists tiq_test;

comment on schema tiq_test is
'pgTAP helpers for the ticketiq tests: fake clock, runs, checkpoint bodies, table fingerprints.';

-- Turn the fake clock on for this transaction and set it to ts.
create or replace function tiq_test.use_fake_clock(ts timestamptz)
returns timestamptz
language plpgsql
as $$
begin
    update ticketiq.config as c
    set fake_clock_allowed = true
    where c.id;
    perform set_config('ticketiq.fake_now', $1::text, true);
    return $1;
end;
$$;

comment on function tiq_test.use_fake_clock(timestamptz) is
'Allow the fake clock (ticketiq.config.fake_clock_allowed) and set ticketiq.fake_now to ts for this transaction.';

-- Move the fake clock forward (or back, with a negative number) by seconds.
create or replace function tiq_test.advance(seconds double precision)
returns timestamptz
language plpgsql
as $$
declare
    v_now timestamptz;
begin
    if nullif(current_setting('ticketiq.fake_now', true), '') is null then
        raise exception 'tiq_test.advance: call tiq_test.use_fake_clock first';
    end if;
    v_now := current_setting('ticketiq.fake_now')::timestamptz + make_interval(secs => $1);
    perform set_config('ticketiq.fake_now', v_now::text, true);
    return v_now;
end;
$$;

comment on function tiq_test.advance(double precision) is
'Move the fake clock by seconds (tiq_test.use_fake_clock first); returns the new time.';

-- A readable fixed run id: rid(1) = 00000000-0000-0000-0000-000000000001.
create or replace function tiq_test.rid(n integer)
returns uuid
language sql
immutable
as $$
    select ('00000000-0000-0000-0000-' || lpad($1::text, 12, '0'))::uuid;
$$;

comment on function tiq_test.rid(integer) is
'Fixed run id number n, for tests that refer to runs by id.';

-- Start a run held by holder for ttl seconds; returns its id.  may_wait
-- and durable are start_run's p_may_wait and p_durable.
create or replace function tiq_test.new_run(
    holder text default 'p1',
    ttl double precision default 8,
    run_id uuid default null,
    may_wait boolean default false,
    durable boolean default true
)
returns uuid
language sql
as $$
    select s.run_id
    from ticketiq.start_run(
        p_holder => $1,
        p_owner => 'owner@example.com',
        p_run_as => 'agent:triage',
        p_channel => 'web',
        p_entry_point => 'playground',
        p_may_wait => $4,
        p_ttl_seconds => $2,
        p_input => '{"ticket": 42}'::jsonb,
        p_correlation_id => null,
        p_idempotency_key => null,
        p_meta => '{}'::jsonb,
        p_run_id => $3,
        p_parent_run_id => null,
        p_durable => $5
    ) as s;
$$;

comment on function tiq_test.new_run(text, double precision, uuid, boolean, boolean) is
'Start a run (owner@example.com, web, playground) held by holder for ttl seconds (may_wait, durable); returns its run id.';

-- Start the child run of a delegation: its parent and its delegation key
-- (the child's idempotency key); returns the child's id (the existing
-- child's when the key was used before).
create or replace function tiq_test.new_child(
    parent_run_id uuid,
    delegation_key text,
    holder text default 'c1',
    ttl double precision default 8,
    run_id uuid default null
)
returns uuid
language sql
as $$
    select s.run_id
    from ticketiq.start_run(
        p_holder => $3,
        p_owner => 'owner@example.com',
        p_run_as => 'agent:research',
        p_channel => 'delegation',
        p_entry_point => 'delegation',
        p_may_wait => false,
        p_ttl_seconds => $4,
        p_input => '{"task": "look up"}'::jsonb,
        p_correlation_id => null,
        p_idempotency_key => $2,
        p_meta => '{}'::jsonb,
        p_run_id => $5,
        p_parent_run_id => $1
    ) as s;
$$;

comment on function tiq_test.new_child(uuid, text, text, double precision, uuid) is
'Start the child run of parent_run_id for delegation_key (its idempotency key), held by holder; returns its run id.';

-- A valid checkpoint body with the given calls.
create or replace function tiq_test.body(calls jsonb default '[]')
returns jsonb
language sql
immutable
as $$
    select jsonb_build_object(
        'conversation', jsonb_build_array(jsonb_build_object('role', 'user', 'content', 'help')),
        'calls', $1,
        'counters', jsonb_build_object('model_steps', 1),
        'history', '[]'::jsonb,
        'delegation_keys', '{}'::jsonb
    );
$$;

comment on function tiq_test.body(jsonb) is
'A valid checkpoint body (conversation, calls, counters, history, delegation_keys) with the given calls.';

-- One call of a checkpoint body.
create or replace function tiq_test.call(
    call_id text,
    classification text,
    step_key text default null
)
returns jsonb
language sql
immutable
as $$
    select jsonb_build_object(
        'call_id', $1,
        'tool', 'tool_' || $2,
        'arguments', jsonb_build_object('for', $1),
        'classification', $2,
        'step_key', $3
    );
$$;

comment on function tiq_test.call(text, text, text) is
'One checkpoint call: call_id, tool tool_<classification>, arguments, classification, step_key.';

-- Write the checkpoint of step for run at epoch with seal 'seal-<step>'.
create or replace function tiq_test.checkpoint(
    run_id uuid,
    epoch bigint,
    step integer,
    calls jsonb default '[]'
)
returns timestamptz
language sql
as $$
    select w.written_at
    from ticketiq.write_checkpoint($1, $2, $3, tiq_test.body($4), 'seal-' || $3::text, 'k1') as w;
$$;

comment on function tiq_test.checkpoint(uuid, bigint, integer, jsonb) is
'Write checkpoint step of run at epoch (body tiq_test.body(calls), seal seal-<step>, key k1).';

-- The run's current epoch.
create or replace function tiq_test.epoch(run_id uuid)
returns bigint
language sql
stable
as $$
    select r.epoch from ticketiq.runs as r where r.run_id = $1;
$$;

comment on function tiq_test.epoch(uuid) is 'The run''s current epoch.';

-- The call ids of a step that have a ticketiq.calls row, in the step's
-- order ('{}' when none).  write_checkpoint stores a row for each changing
-- call only: a read has none until mark_in_doubt records it as a write.
create or replace function tiq_test.call_rows(run_id uuid, step integer)
returns text[]
language sql
stable
as $$
    select coalesce(array_agg(c.call_id order by c.ordinal), array[]::text[])
    from ticketiq.calls as c
    where c.run_id = $1 and c.step = $2;
$$;

comment on function tiq_test.call_rows(uuid, integer) is
'Call ids of the run''s step that have a ticketiq.calls row, in order (a read has none); ''{}'' when none.';

-- The call ids a step's checkpoint body lists, in order (every call,
-- reads included), or null when the step has no checkpoint.
create or replace function tiq_test.body_call_ids(run_id uuid, step integer)
returns text[]
language sql
stable
as $$
    select array(
        select e.value ->> 'call_id'
        from jsonb_array_elements(k.body -> 'calls') with ordinality as e
        order by e.ordinality
    )
    from ticketiq.checkpoints as k
    where k.run_id = $1 and k.step = $2;
$$;

comment on function tiq_test.body_call_ids(uuid, integer) is
'Call ids listed in the checkpoint body of the run''s step (reads included), in order; null without a checkpoint.';

-- The approval request filed for a run's call (any step), or null.
create or replace function tiq_test.approval_id(run_id uuid, call_id text)
returns uuid
language sql
stable
as $$
    select a.approval_id from ticketiq.approval_requests as a where a.run_id = $1 and a.call_id = $2;
$$;

comment on function tiq_test.approval_id(uuid, text) is
'The approval request filed for call_id of the run, or null when none was filed.';

-- Let the run's lease lapse (the fake clock moves to one second past its
-- expiry, never back) and sweep.  The sweep claims every lapsed run.
create or replace function tiq_test.lose(run_id uuid)
returns bigint
language plpgsql
as $$
declare
    v_expires timestamptz;
begin
    select r.lease_expires_at into v_expires from ticketiq.runs as r where r.run_id = $1;
    if v_expires is null then
        raise exception 'tiq_test.lose: run % holds no lease', $1;
    end if;
    if v_expires + interval '1 second' > ticketiq.now() then
        perform tiq_test.use_fake_clock(v_expires + interval '1 second');
    end if;
    perform 1 from ticketiq.sweep_lapsed('tiq_test_sweeper');
    return tiq_test.epoch($1);
end;
$$;

comment on function tiq_test.lose(uuid) is
'Move the fake clock past the run''s lease and sweep (claims every lapsed run); returns the run''s epoch.';

-- Lose the run and adopt it as holder; returns the adopting epoch.
create or replace function tiq_test.take_over(
    run_id uuid,
    holder text default 'p2',
    ttl double precision default 8
)
returns bigint
language plpgsql
as $$
declare
    v_epoch bigint;
begin
    perform tiq_test.lose($1);
    select a.epoch into v_epoch from ticketiq.adopt_run($2, $3, $1) as a;
    if v_epoch is null then
        raise exception 'tiq_test.take_over: run % was not adopted', $1;
    end if;
    return v_epoch;
end;
$$;

comment on function tiq_test.take_over(uuid, text, double precision) is
'Lose the run (tiq_test.lose) and adopt it as holder; returns the adopting epoch.';

-- Accept an entry (owner@example.com, agent:triage, channel web) of kind
-- with the sender's id; returns its entry id.
create or replace function tiq_test.new_entry(
    kind text,
    sender_id text,
    durable boolean default true,
    may_wait boolean default false,
    payload jsonb default '{"ticket": 42}'
)
returns bigint
language sql
as $$
    select a.entry_id
    from ticketiq.accept_entry($1, $2, $5, 'owner@example.com', 'agent:triage', 'web', $4, $3) as a;
$$;

comment on function tiq_test.new_entry(text, text, boolean, boolean, jsonb) is
'Accept an entry of kind from sender_id (owner@example.com, agent:triage, web); returns its entry id.';

-- Accept an entry of kind from sender_id and claim the pending entries as
-- holder (ticketiq.claim_entries): returns the run started for it.
create or replace function tiq_test.entry_run(
    sender_id text,
    holder text default 'p1',
    ttl double precision default 8,
    durable boolean default true,
    kind text default 'a2a'
)
returns uuid
language plpgsql
as $$
declare
    v_entry_id bigint := tiq_test.new_entry($5, $1, $4);
    v_run_id uuid;
begin
    perform 1 from ticketiq.claim_entries($2, $3, 1000);
    select e.run_id into v_run_id from ticketiq.entries as e where e.entry_id = v_entry_id;
    if v_run_id is null then
        raise exception 'tiq_test.entry_run: entry % was not claimed', v_entry_id;
    end if;
    return v_run_id;
end;
$$;

comment on function tiq_test.entry_run(text, text, double precision, boolean, text) is
'Accept an entry (kind, sender_id, durable) and claim it as holder; returns the run started for it.';

-- md5 of each ticketiq table's contents, one row per table.
create or replace function tiq_test.table_digests()
returns table (table_name text, digest text)
language plpgsql
stable
as $$
declare
    v_table text;
begin
    for v_table in
        select c.relname::text
        from pg_catalog.pg_class as c
        inner join pg_catalog.pg_namespace as n on c.relnamespace = n.oid
        where n.nspname = 'ticketiq' and c.relkind in ('r', 'p')
        order by c.relname
    loop
        table_name := v_table;
        execute format(
            'select md5(coalesce(string_agg(t::text, E''\n'' order by t::text), '''')) from ticketiq.%I as t',
            v_table
        ) into digest;
        return next;
    end loop;
end;
$$;

comment on function tiq_test.table_digests() is
'md5 of every ticketiq table''s rows, one row per table (to find which table a call changed).';

-- md5 of all ticketiq tables' contents: equal before and after a rejected
-- call proves it changed nothing (invariant I15).
create or replace function tiq_test.table_fingerprint()
returns text
language sql
stable
as $$
    select md5(string_agg(d.table_name || ':' || d.digest, ';' order by d.table_name))
    from tiq_test.table_digests() as d;
$$;

comment on function tiq_test.table_fingerprint() is
'md5 of all ticketiq tables'' contents (invariant I15: a rejected call leaves it unchanged).';

-- Remember the fingerprint for this transaction; compare later with
-- is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), ...).
create or replace function tiq_test.save_fingerprint()
returns text
language sql
as $$
    select set_config('tiq_test.fingerprint', tiq_test.table_fingerprint(), true);
$$;

comment on function tiq_test.save_fingerprint() is
'Store tiq_test.table_fingerprint() for this transaction (see tiq_test.saved_fingerprint).';

create or replace function tiq_test.saved_fingerprint()
returns text
language sql
stable
as $$
    select nullif(current_setting('tiq_test.fingerprint', true), '');
$$;

comment on function tiq_test.saved_fingerprint() is
'The fingerprint stored by tiq_test.save_fingerprint() in this transaction.';

-- A process that registered and held its liveness token on this session,
-- then "died": the lock is released, so no session holds its key any more
-- (as when PostgreSQL ends a dead process's session).  Returns its key.
create or replace function tiq_test.dead_process(process_id text)
returns integer
language plpgsql
as $$
declare
    v_key integer;
begin
    perform ticketiq.register_process($1, 'host-x', 1);
    select h.liveness_key into v_key from ticketiq.hold_liveness($1) as h;
    perform pg_advisory_unlock(29809, v_key);
    return v_key;
end;
$$;

comment on function tiq_test.dead_process(text) is
'Register process_id, hold its liveness token here, then release the lock as a dying session would; returns its key.';

-- Register watcher and hold its liveness token on this session; returns the
-- session token ticketiq.watch_processes gives this session (pid:key).
create or replace function tiq_test.watch_session(watcher text default 'w')
returns text
language plpgsql
as $$
declare
    v_key integer;
begin
    select p.liveness_key into v_key
    from ticketiq.processes as p
    where p.process_id = $1
        and exists (
            select 1 from pg_locks as l
            where l.locktype = 'advisory' and l.classid = 29809 and l.objsubid = 2
                and l.objid = p.liveness_key::text::oid and l.pid = pg_backend_pid()
        );
    if v_key is null then
        perform ticketiq.register_process($1, 'host-w', 2);
        select h.liveness_key into v_key from ticketiq.hold_liveness($1) as h;
    end if;
    return pg_backend_pid() || ':' || v_key;
end;
$$;

comment on function tiq_test.watch_session(text) is
'Register watcher and hold its token on this session (once); returns the session token watch_processes gives it.';

-- The plan of a statement, EXPLAIN (COSTS OFF), one line after another: for
-- tests that a lookup can use (or does use) a given index.
create or replace function tiq_test.plan_of(statement text)
returns text
language plpgsql
as $$
declare
    v_line text;
    v_plan text := '';
begin
    for v_line in execute 'explain (costs off) ' || $1 loop
        v_plan := v_plan || v_line || E'\n';
    end loop;
    return v_plan;
end;
$$;

comment on function tiq_test.plan_of(text) is
'EXPLAIN (COSTS OFF) of the statement, as one text.';

-- The fenced cases every fenced write of either kind shares (I1, I15), as
-- pgTAP lines: statement is a format() string (%1$L the run's or job's id,
-- %2$s the epoch) and setup, run once for the new lease, prepares it (e.g.
-- a checkpoint with a call).  The helper starts a run (kind 'run', held by
-- p1 for 8 s) or claims a resumable job (kind 'job'), then checks in turn:
-- an unknown id raises TQ001/TQ010; the lapsed lease, before any sweep,
-- TQ003 and nothing changed; once swept, the old epoch TQ002 and the
-- sweep's epoch TQ006 (claimed or queued again), and nothing changed.
-- Six tests; needs tiq_test.use_fake_clock first.
create or replace function tiq_test.fenced(
    kind text,
    statement text,
    setup text default null
)
returns setof text
language plpgsql
as $$
declare
    v_id uuid;
begin
    if kind = 'run' then
        v_id := tiq_test.new_run('p1', 8, tiq_test.rid(900));
    else
        perform ticketiq.enqueue_job('source_sync', '{}', true, 'tiq_test.fenced');
        select j.job_id into v_id
        from ticketiq.jobs as j where j.idempotency_key = 'tiq_test.fenced';
        update ticketiq.jobs as j set created_at = '-infinity' where j.job_id = v_id;
        perform ticketiq.claim_job('p1', 8);
    end if;
    if setup is not null then
        execute format(setup, v_id, 1);
    end if;

    return next throws_ok(format(statement, tiq_test.rid(999), 1),
        case kind when 'run' then 'TQ001' else 'TQ010' end, null, 'unknown ' || kind);
    perform tiq_test.advance(9);
    perform tiq_test.save_fingerprint();
    return next throws_ok(format(statement, v_id, 1), 'TQ003', null, 'lapsed lease, before any sweep');
    return next is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
        'the lapsed writer changed nothing');
    if kind = 'run' then
        perform ticketiq.sweep_lapsed('tiq_test');
    else
        perform ticketiq.sweep_jobs('tiq_test');
    end if;
    perform tiq_test.save_fingerprint();
    return next throws_ok(format(statement, v_id, 1), 'TQ002', null, 'swept: the old epoch is stale');
    return next throws_ok(format(statement, v_id, 2), 'TQ006', null,
        'at the sweep''s epoch the ' || kind || ' is not running');
    return next is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
        'the fenced writes changed nothing');
end;
$$;

comment on function tiq_test.fenced(text, text, text) is
'The fenced cases of a write of kind run or job (unknown, lapsed, stale epoch, not running; nothing changed), six pgTAP lines.';

-- n four-byte characters (U+10000 and up) that do not compress: each drawn
-- from md5 of its position and seed.  A btree compresses a long index row
-- before it measures it, so repeat() of one character fits where text of
-- this kind (what an attacker sends) overflows.
create or replace function tiq_test.wide_text(n integer, seed text default '')
returns text
language sql
immutable
as $$
    select string_agg(chr(65536 + ('x' || substr(md5($2 || i::text), 1, 5))::bit(20)::integer), '' order by i)
    from generate_series(1, $1) as i;
$$;

comment on function tiq_test.wide_text(integer, text) is
'n four-byte characters that do not compress (drawn from md5 of position and seed): the worst case of a text limit.';

-- The largest row each btree index of schema ticketiq can be asked to hold,
-- from the limits declared on its columns: a text column's CHECK (of the
-- table, or of its domain) of char_length(col) <= n (or length) counts 4n
-- bytes, four a character, and of octet_length(col) <= n counts n; a
-- fixed-width column its width.  Each column is aligned as its type is
-- (text as a 4-byte header), after the 8-byte tuple header; the sum is
-- MAXALIGNed.  undeclared lists the text columns with no limit (then
-- max_bytes is null).  allowed: text columns whose limit the functions
-- that write them hold instead of a CHECK (table.column => characters).
create or replace function tiq_test.index_row_bounds(allowed jsonb default '{}')
returns table (index_name text, table_name text, max_bytes integer, undeclared text[])
language plpgsql
stable
as $$
declare
    v_index record;
    v_col record;
    v_off integer;
    v_align integer;
    v_len integer;
begin
    for v_index in
        select i.indexrelid, i.indrelid, i.indkey::integer[] as cols, c.relname::text as iname,
            t.relname::text as tname
        from pg_catalog.pg_index as i
        inner join pg_catalog.pg_class as c on i.indexrelid = c.oid
        inner join pg_catalog.pg_class as t on i.indrelid = t.oid
        inner join pg_catalog.pg_namespace as n on c.relnamespace = n.oid
        inner join pg_catalog.pg_am as am on c.relam = am.oid
        where n.nspname = 'ticketiq' and am.amname = 'btree'
        order by c.relname
    loop
        index_name := v_index.iname;
        table_name := v_index.tname;
        undeclared := '{}';
        v_off := 8;
        for v_col in
            select a.attname::text as name, a.atttypid, a.attnum,
                coalesce(nullif(ty.typbasetype, 0), ty.oid) as base,
                ty.typlen as len, ty.typalign as align
            from unnest(v_index.cols) with ordinality as k (attnum, ord)
            inner join pg_catalog.pg_attribute as a on a.attrelid = v_index.indrelid and a.attnum = k.attnum
            inner join pg_catalog.pg_type as ty on a.atttypid = ty.oid
            order by k.ord
        loop
            v_align := case v_col.align when 'c' then 1 when 's' then 2 when 'i' then 4 else 8 end;
            if v_col.len > 0 then
                v_len := v_col.len;
            else
                v_align := greatest(v_align, 4);
                select min(case when m[1] = 'octet_length' then m[2]::integer else 4 * m[2]::integer end)
                into v_len
                from pg_catalog.pg_constraint as con
                cross join lateral regexp_match(
                    pg_catalog.pg_get_constraintdef(con.oid),
                    '^CHECK \(+(char_length|octet_length|length)\(\(?(?:VALUE|' || v_col.name
                    || ')(?:\)::text)?\) <= (\d+)\)+(?: NOT VALID)?$'
                ) as m
                where m is not null and (
                    (con.conrelid = v_index.indrelid and con.conkey = array[v_col.attnum]::smallint[])
                    or con.contypid = v_col.atttypid
                );
                if v_len is null and allowed ? (v_index.tname || '.' || v_col.name) then
                    v_len := 4 * (allowed ->> (v_index.tname || '.' || v_col.name))::integer;
                end if;
                if v_len is null then
                    undeclared := undeclared || v_col.name;
                    continue;
                end if;
                v_len := v_len + 4;
            end if;
            v_off := ((v_off + v_align - 1) / v_align) * v_align + v_len;
        end loop;
        max_bytes := case when cardinality(undeclared) = 0 then ((v_off + 7) / 8) * 8 end;
        return next;
    end loop;
end;
$$;

comment on function tiq_test.index_row_bounds(jsonb) is
'Each ticketiq btree index with the largest row its columns'' declared limits allow (4 bytes a character), or the text columns without a limit.';

-- A W3C traceparent (version 00, flags 01) whose trace id repeats the hex
-- digit t and whose span id repeats s.
create or replace function tiq_test.traceparent(t text, s text)
returns text
language sql
immutable
as $$
    select '00-' || repeat($1, 32) || '-' || repeat($2, 16) || '-01';
$$;

comment on function tiq_test.traceparent(text, text) is
'The traceparent 00-<t x 32>-<s x 16>-01.';

-- A checkpoint body holding only what ticketiq._can_run_workflow reads:
-- counters.workflow's name and version and, once newer code took a step, that
-- code's version (code; null: none).
create or replace function tiq_test.workflow_body(
    version text,
    code text default null,
    workflow text default 'flow'
)
returns jsonb
language sql
immutable
as $$
    select jsonb_build_object('counters', jsonb_build_object('workflow',
        jsonb_strip_nulls(jsonb_build_object('name', $3, 'version', $1, 'code', $2))));
$$;

comment on function tiq_test.workflow_body(text, text, text) is
'The body {"counters": {"workflow": {"name", "version"[, "code"]}}} of a workflow run''s checkpoint.';

-- Start a workflow run (entry point = the workflow's name) held by holder,
-- its first checkpoint naming the workflow and version as the engine's
-- does (counters.workflow); returns its run id.
create or replace function tiq_test.workflow_run(
    run_id uuid,
    workflow text default 'flow',
    version text default '1',
    holder text default 'p1'
)
returns uuid
language plpgsql
as $$
begin
    perform 1 from ticketiq.start_run(
        p_holder => $4, p_owner => 'owner@example.com', p_run_as => 'workflow',
        p_channel => 'web', p_entry_point => $2, p_may_wait => false, p_ttl_seconds => 8,
        p_input => '{}'::jsonb, p_correlation_id => null, p_idempotency_key => null,
        p_meta => '{}'::jsonb, p_run_id => $1, p_parent_run_id => null);
    perform 1 from ticketiq.write_checkpoint($1, 1, 1,
        jsonb_set(tiq_test.body(), '{counters,workflow}',
            jsonb_build_object('name', $2, 'version', $3, 'at', 'wait')),
        'seal-1', 'k1');
    return $1;
end;
$$;

comment on function tiq_test.workflow_run(uuid, text, text, text) is
'Start a workflow run (entry point: its name) held by holder with a first checkpoint naming the workflow and version; returns its run id.';

-- A rolling deploy's two workers: run rid(1), of flow version 1, claimed
-- (lost by its holder); process 'new' declares flow version 2 only, 'old'
-- version 1, neither holding a liveness token.
create or replace function tiq_test.deploy_pair()
returns void
language plpgsql
as $$
begin
    perform tiq_test.workflow_run(tiq_test.rid(1), 'flow', '1');
    perform tiq_test.lose(tiq_test.rid(1));
    perform ticketiq.register_process('new', 'h', 1);
    perform ticketiq.declare_workflows('new',
        '[{"name": "flow", "version": "2", "kind": "flow", "runs": ["2"]}]');
    perform ticketiq.register_process('old', 'h', 2);
    perform ticketiq.declare_workflows('old',
        '[{"name": "flow", "version": "1", "kind": "flow", "runs": ["1"]}]');
end;
$$;

comment on function tiq_test.deploy_pair() is
'A rolling deploy''s workers: run rid(1) of flow version 1 claimed, process new declaring version 2, old version 1.';

-- Runs rid(1)..rid(n) whose step 1 left one call w1 of the classification
-- (in doubt when it writes), lost together and adopted by p2 at epoch 3.
create or replace function tiq_test.resumed_runs(n integer, classification text default 'read')
returns void
language plpgsql
as $$
begin
    perform tiq_test.new_run('p1', 8, tiq_test.rid(i)) from generate_series(1, $1) as i;
    perform tiq_test.checkpoint(tiq_test.rid(i), 1, 1, jsonb_build_array(tiq_test.call('w1', $2)))
    from generate_series(1, $1) as i;
    if $2 <> 'read' then
        perform ticketiq.mark_in_doubt(tiq_test.rid(i), 1, 1, 'w1') from generate_series(1, $1) as i;
    end if;
    perform tiq_test.lose(tiq_test.rid(1));  -- the sweep claims them all
    perform ticketiq.adopt_run('p2', 8, tiq_test.rid(i)) from generate_series(1, $1) as i;
end;
$$;

comment on function tiq_test.resumed_runs(integer, text) is
'Runs rid(1)..rid(n) with a step-1 call w1 of the classification (marked in doubt unless a read), lost and adopted by p2 at epoch 3.';
