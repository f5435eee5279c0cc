-- ticketiq.get_answer(run): a run's sealed answer, with its seal.
--
-- The step, body, seal and key id that ticketiq.seal_answer stored, when it
-- was sealed, until when it is kept, and whether and by which epoch it was
-- handed on (ticketiq.hand_on_answer).  A caller verifies the seal
-- (kind 'answer') before it trusts the body.  No row while the run has no
-- sealed answer (or its answer was purged).
-- Limits:
--   p_run_id  any run id
-- SQLSTATEs: TQ001 unknown run.
create or replace function ticketiq.get_answer(p_run_id uuid)
returns table (
    run_id uuid,
    step integer,
    epoch bigint,
    body jsonb,
    seal text,
    seal_key_id text,
    sealed_at timestamptz,
    retain_until timestamptz,
    handed_on_at timestamptz,
    handed_on_epoch bigint
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if not exists (select 1 from ticketiq.runs as r where r.run_id = p_run_id) then
        raise exception 'unknown run %', p_run_id using errcode = 'TQ001';
    end if;
    return query
    select a.run_id, a.step, a.epoch, a.body, a.seal, a.seal_key_id, a.sealed_at,
        a.retain_until, a.handed_on_at, a.handed_on_epoch
    from ticketiq.answers as a
    where a.run_id = p_run_id;
end;
$$;

comment on function ticketiq.get_answer(uuid) is
'A run''s sealed answer with its seal, when it was sealed and handed on; no row without one. TQ001 unknown.';
