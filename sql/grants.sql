-- ticketiq-pg roles and grants, applied after the schema and the functions.
--
-- ticketiq_app       the app processes: EXECUTE on the API functions only;
--                    no table privilege, so every state change goes through
--                    the fenced functions (SECURITY DEFINER).
-- ticketiq_operator  people with psql: SELECT on the operator views only.
-- Both are NOLOGIN group roles: grant them to login roles of your own.

do $$
begin
    create role ticketiq_app nologin;
exception when duplicate_object or unique_violation then
    null;
end;
$$;

do $$
begin
    create role ticketiq_operator nologin;
exception when duplicate_object or unique_violation then
    null;
end;
$$;

revoke all on schema ticketiq from public;
revoke all on all tables in schema ticketiq from public;
revoke all on all sequences in schema ticketiq from public;
revoke all on all functions in schema ticketiq from public;

grant usage on schema ticketiq to ticketiq_app, ticketiq_operator;

revoke all on all tables in schema ticketiq from ticketiq_app;

grant execute on function
ticketiq.now(),
ticketiq.schema_version(),
ticketiq.start_run(
    text, text, text, text, text, boolean, double precision, jsonb, text, text, jsonb, uuid, uuid,
    boolean
),
ticketiq.write_checkpoint(uuid, bigint, integer, jsonb, text, text),
ticketiq.write_checkpoints(uuid[], bigint[], integer[], jsonb, text[], text[]),
ticketiq.mark_in_doubt(uuid, bigint, integer, text, text, text, text),
ticketiq.mark_calls_in_doubt(uuid, bigint, integer, jsonb),
ticketiq.record_outcome(uuid, bigint, integer, text, jsonb, text, text, text),
ticketiq.renew_leases(text, uuid[], bigint[], double precision, text),
ticketiq.claim_leader(text, text, double precision),
ticketiq.renew_leader(text, text, bigint, double precision),
ticketiq.resign_leader(text, text),
ticketiq.sweep_lapsed(text, integer, integer),
ticketiq.adopt_run(text, double precision, uuid),
ticketiq.adopt_runs(text, double precision, integer),
ticketiq.release_run(uuid, bigint, text, jsonb),
ticketiq.seal_answer(uuid, bigint, integer, jsonb, text, text, double precision),
ticketiq.hand_on_answer(uuid, bigint),
ticketiq.fail_run(uuid, bigint, text, text),
ticketiq.stop_run(uuid, bigint, text),
ticketiq.request_stop(uuid, text, text),
ticketiq.record_resume(uuid, bigint, jsonb),
ticketiq.record_resumes(uuid[], bigint[], jsonb),
ticketiq.register_process(text, text, integer),
ticketiq.declare_workflows(text, jsonb),
ticketiq.unrunnable_runs(integer, text),
ticketiq.fail_unrunnable_runs(text, double precision, integer),
ticketiq.hold_liveness(text),
ticketiq.release_liveness(text),
ticketiq.watch_processes(text, text, text[], integer, double precision),
ticketiq.purge_answers(integer),
ticketiq.request_approval(uuid, bigint, integer, text, jsonb),
ticketiq.decide_approval(uuid, boolean, text, text),
ticketiq.get_approval(uuid),
ticketiq.delegation_status(text),
ticketiq.take_over_child(uuid, bigint, uuid, text, double precision, integer),
ticketiq.suspend_run(uuid, bigint, text, jsonb),
ticketiq.await_first(uuid, bigint, text, uuid[], jsonb),
ticketiq.wake_runs(text),
ticketiq.accept_entry(text, text, jsonb, text, text, text, boolean, boolean, integer),
ticketiq.claim_entries(text, double precision, integer, double precision, integer),
ticketiq.get_entry(text, text, text),
ticketiq.get_entry_by_run(uuid),
ticketiq.create_api_key(text, bytea, text, text[], text[]),
ticketiq.find_api_key(text),
ticketiq.list_api_keys(),
ticketiq.revoke_api_key(text),
ticketiq.note_api_key_use(text),
ticketiq.get_answer(uuid),
ticketiq.upsert_cron_schedule(text, double precision, jsonb, text, text, text, timestamptz, boolean),
ticketiq.fire_due_crons(boolean, integer),
ticketiq.mark_delivery(uuid, bigint),
ticketiq.get_run(uuid),
ticketiq.run_transcript(uuid),
ticketiq.run_events_after(uuid, bigint, integer),
ticketiq.enqueue_job(text, jsonb, boolean, text),
ticketiq.claim_job(text, double precision, text[]),
ticketiq.checkpoint_job(uuid, bigint, jsonb),
ticketiq.finish_job(uuid, bigint, jsonb),
ticketiq.fail_job(uuid, bigint, text),
ticketiq.sweep_jobs(text, integer, integer),
ticketiq.get_job(uuid)
to ticketiq_app;

-- Retention: ticketiq.purge_history (finished runs' history), beside purge_answers.
grant execute on function ticketiq.purge_history(double precision, integer) to ticketiq_app;

-- Failures are not crashes (schema 9): attempts counted across epochs, audits written once.
grant execute on function
ticketiq.record_attempt(uuid, bigint, integer, text, text),
ticketiq.audit_once(uuid, bigint, text, text, jsonb)
to ticketiq_app;

-- The inspector: an operator's ad hoc calls of the app's tools, audited.
grant execute on function
ticketiq.audit_inspector_call(text, uuid, text, text, text, text, jsonb)
to ticketiq_app;

-- Traces: the resuming process names the process that lost the run.
grant execute on function ticketiq.run_losses(uuid) to ticketiq_app, ticketiq_operator;
grant execute on function
ticketiq.record_trace_context(text, text, text, text),
ticketiq.run_trace_context(uuid)
to ticketiq_app;

-- Vendor limits shared by every process (schema 21).
grant execute on function
ticketiq.set_vendor_limit(text, double precision, integer, integer, text, text),
ticketiq.take_vendor_token(text, uuid, bigint, text, text),
ticketiq.give_vendor_token(uuid, text),
ticketiq.slow_vendor(text, text, double precision),
ticketiq.vendor_limit_figures(),
ticketiq.suspend_for_vendor(text, uuid, bigint, text, text)
to ticketiq_app;
grant execute on function ticketiq.vendor_limit_figures() to ticketiq_operator;

-- Durable waits of workflow runs (schema 15): timers and signals.
grant execute on function
ticketiq.wait_run(uuid, bigint, text, text, double precision, jsonb),
ticketiq.fire_due_timers(integer),
ticketiq.send_signal(uuid, text, jsonb, text, text)
to ticketiq_app;

-- Operating runs (schema 23): the list, a Stop by filter, a restart, a fork from a step.
grant execute on function
ticketiq.list_runs(
    text, text[], text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, timestamptz, uuid,
    integer
),
ticketiq.stop_runs(text, text, text, text[], text, text, timestamptz, timestamptz, integer),
ticketiq.restart_run(uuid, text, text),
ticketiq.fork_source(uuid, integer),
ticketiq.fork_run(uuid, integer, uuid, text, text, jsonb, text, jsonb, text)
to ticketiq_app;

grant execute on function
ticketiq.now(),
ticketiq.schema_version(),
ticketiq.get_run(uuid),
ticketiq.run_transcript(uuid),
ticketiq.run_events_after(uuid, bigint, integer)
to ticketiq_operator;

grant select on
ticketiq.runs_in_flight,
ticketiq.calls_in_doubt,
ticketiq.resume_audit,
ticketiq.approvals_waiting,
ticketiq.entries_open,
ticketiq.jobs_open
to ticketiq_operator;
