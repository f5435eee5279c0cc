-- ticketiq.wake_runs(wait key): the event a suspended run waits for happened.
--
-- For events outside the database (a person's reply arrived): every run
-- suspended on p_wait_key becomes claimed (epoch + 1) and ticketiq_resume is
-- NOTIFYed.  Approvals and child runs wake their waiters themselves.
-- Returns how many runs were woken.
-- Limits:
--   p_wait_key  1..512
-- SQLSTATEs: TQ004 (bad wait key).
create or replace function ticketiq.wake_runs(p_wait_key text)
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform ticketiq._require_text('wait_key', p_wait_key, 512);
    return ticketiq._wake(p_wait_key, ticketiq.now());
end;
$$;

comment on function ticketiq.wake_runs(text) is
'Wake every run suspended on p_wait_key (claimed, epoch + 1, NOTIFY ticketiq_resume); returns how many.';
