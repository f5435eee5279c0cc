-- ticketiq.give_vendor_token(run, call): a call under a vendor's
-- concurrency has ended: it no longer counts in flight.
--
-- Not fenced: giving back is safe whoever does it (a call of a run lost
-- meanwhile no longer counted anyway).  Returns whether a call was in
-- flight.
-- Limits:
--   p_run_id   any run id
--   p_call_id  1..256
-- SQLSTATEs: TQ004 (bad call id).
create or replace function ticketiq.give_vendor_token(
    p_run_id uuid,
    p_call_id text
)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform ticketiq._require_text('call_id', p_call_id, 256);
    delete from ticketiq.vendor_calls as c where c.run_id = p_run_id and c.call_id = p_call_id;
    return found;
end;
$$;

comment on function ticketiq.give_vendor_token(uuid, text) is
'A call under a vendor''s concurrency ended: it no longer counts in flight. TQ004 bad call id.';
