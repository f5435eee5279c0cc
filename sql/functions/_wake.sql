-- ticketiq._wake(wait key, now, run): wake the runs suspended on a key.
--
-- A suspended run gave up its lease while it waited.  Waking makes it
-- 'claimed' (epoch + 1, no loss counted, claim_reason 'woken') and NOTIFYs
-- ticketiq_resume, so whichever process adopts it first resumes it.  With
-- p_run_id only that run is woken, if it is suspended on the key: a
-- workflow's timer or signal is its run's, and another run that chose the
-- same key is not its waiter (issue 46, finding 4); null wakes every run on
-- the key (a person's reply, an approval, a child run's end).
-- Returns how many runs it woke.
create or replace function ticketiq._wake(p_wait_key text, p_now timestamptz, p_run_id uuid default null)
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
    v_run_id uuid;
    v_count integer := 0;
begin
    for v_run_id in
        update ticketiq.runs as r
        set status = 'claimed',
            epoch = r.epoch + 1,
            wait_key = null,
            claim_reason = 'woken',
            updated_at = p_now
        where r.status = 'suspended' and r.wait_key = p_wait_key
            and (p_run_id is null or r.run_id = p_run_id)
        returning r.run_id
    loop
        insert into ticketiq.audit (at, event, run_id, detail)
        values (p_now, 'agent.run.woken', v_run_id, jsonb_build_object('wait_key', p_wait_key));
        perform pg_notify('ticketiq_resume', v_run_id::text);
        v_count := v_count + 1;
    end loop;
    return v_count;
end;
$$;

comment on function ticketiq._wake(text, timestamptz, uuid) is
'Internal: make the runs suspended on p_wait_key (only p_run_id, when given) claimed (epoch + 1) and NOTIFY ticketiq_resume.';
