-- ticketiq.fork_source(run, step): what a fork of a run from one of its steps copies.
--
-- The run (its owner, run-as, channel, entry point, input, whether it may
-- wait and is written ahead) and its checkpoints from step 1 to p_step, in
-- order, each {step, body, seal, seal_key_id}, read in one statement.  The
-- caller verifies them, in order, under the seal keys (I9), seals them anew
-- for the fork's run id and writes the fork with ticketiq.fork_run.
-- Limits:
--   p_run_id  the run forked
--   p_step    >= 1
-- SQLSTATEs: TQ004 (a step below 1, or one the run did not write), TQ001 unknown run.
create or replace function ticketiq.fork_source(
    p_run_id uuid,
    p_step integer
)
returns table (
    run_id uuid,
    owner text,
    run_as text,
    channel text,
    entry_point text,
    may_wait boolean,
    durable boolean,
    status text,
    last_step integer,
    input jsonb,
    checkpoints jsonb
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_run ticketiq.runs;
begin
    if p_step is null or p_step < 1 then
        raise exception 'step must be >= 1, got %', p_step using errcode = 'TQ004';
    end if;
    select r.* into v_run from ticketiq.runs as r where r.run_id = p_run_id;
    if not found then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
    if not exists (select 1 from ticketiq.checkpoints as c where c.run_id = p_run_id and c.step = p_step) then
        raise exception 'run % wrote no step % (its last step is %)', p_run_id, p_step, v_run.last_step
            using errcode = 'TQ004';
    end if;
    return query
    select v_run.run_id, v_run.owner::text, v_run.run_as::text, v_run.channel::text,
        v_run.entry_point::text, v_run.may_wait, v_run.durable, v_run.status::text,
        v_run.last_step::integer, v_run.input,
        (
            select jsonb_agg(jsonb_build_object(
                'step', c.step, 'body', c.body, 'seal', c.seal, 'seal_key_id', c.seal_key_id
            ) order by c.step)
            from ticketiq.checkpoints as c
            where c.run_id = p_run_id and c.step <= p_step
        );
end;
$$;

comment on function ticketiq.fork_source(uuid, integer) is
'A run and its checkpoints from step 1 to p_step, in order, for a fork to verify and seal anew. TQ001, TQ004.';
