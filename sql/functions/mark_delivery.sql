-- ticketiq.mark_delivery(run, epoch): an answer's delivery is about to be sent.
--
-- For an entry point whose delivery can be confirmed by reading it back (a
-- Teams reply): marked before the reply is posted, so a process that
-- replaces a dead one knows to read it back before posting, and a reply is
-- posted once.  Marking again returns the first mark with already_started
-- true: whoever sees that reads the reply back before posting.  Fenced (TQ001/TQ002/TQ003/TQ006); TQ007 when
-- the run has no sealed answer.
-- Limits:
--   p_run_id  the run
--   p_epoch   the writer's epoch
-- SQLSTATEs: TQ001, TQ002, TQ003, TQ006 (ticketiq._fence), TQ007 no sealed
--   answer.
create or replace function ticketiq.mark_delivery(p_run_id uuid, p_epoch bigint)
returns table (
    delivery_started_at timestamptz,
    already_started boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
    v_answer ticketiq.answers;
begin
    perform ticketiq._fence('run', p_run_id, p_epoch, v_now);
    select a.* into v_answer from ticketiq.answers as a where a.run_id = p_run_id for update;
    if not found then
        raise exception 'run % has no sealed answer to deliver', p_run_id using errcode = 'TQ007';
    end if;
    if v_answer.delivery_started_at is not null then
        return query select v_answer.delivery_started_at, true;
        return;
    end if;
    update ticketiq.answers as a
    set delivery_started_at = v_now
    where a.run_id = p_run_id;
    return query select v_now, false;
end;
$$;

comment on function ticketiq.mark_delivery(uuid, bigint) is
'Mark that a sealed answer''s delivery is about to be sent (read it back on resume before posting). Fenced.';
